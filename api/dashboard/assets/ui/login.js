// The sign-in page: it trades a token for a browser session (an HttpOnly
// cookie the page never sees) and a CSRF secret, which the dashboard sends
// as the Mcpx-Csrf header with every API request. The secret is kept in this
// origin's localStorage, which no other origin (another port included) can
// read, unlike the cookie.
const form = document.getElementById('login');
const errorBox = document.getElementById('error');
const endedBox = document.getElementById('ended');

// A session the broker ended (a revoked or expired token) says why here:
// the dashboard kept the broker's reason for this tab.
const ended = sessionStorage.getItem('mcpx.ended');
if (ended) {
  sessionStorage.removeItem('mcpx.ended');
  endedBox.textContent = `You were signed out: ${ended}`;
  endedBox.hidden = false;
}

// next is where to go after signing in: a path on this origin only.
function next() {
  const n = new URLSearchParams(location.search).get('next') || '/';
  return /^\/(?![/\\])/.test(n) ? n : '/';
}

form.addEventListener('submit', async (e) => {
  e.preventDefault();
  errorBox.hidden = true;
  endedBox.hidden = true;
  const token = document.getElementById('token').value.trim();
  try {
    const r = await fetch('/login', {
      method: 'POST',
      credentials: 'same-origin',
      headers: {'Content-Type': 'application/json', 'Mcpx-Client': 'mcpx-dashboard'},
      body: JSON.stringify({token}),
    });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) {
      throw new Error(body.detail || body.title || `sign-in failed (${r.status})`);
    }
    localStorage.setItem('mcpx.csrf', body.csrf);
    location.assign(next());
  } catch (err) {
    errorBox.textContent = err.message;
    errorBox.hidden = false;
  }
});
