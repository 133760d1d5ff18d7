// The dashboard's API client: every request carries the browser session's
// cookie (sent by the browser) and its CSRF secret as Mcpx-Csrf, which only
// pages of this origin can read; the broker refuses a cookie without it.

const csrf = localStorage.getItem('mcpx.csrf') || '';

// ProblemError is a problem+json answer as an Error.
export class ProblemError extends Error {
  constructor(status, p) {
    super(p.detail || p.title || `HTTP ${status}`);
    this.status = status;
    this.problem = p;
  }
}

// toLogin goes to the sign-in page, which says why the session ended
// (why, kept for it in this tab's sessionStorage) if there is a reason.
export function toLogin(why) {
  localStorage.removeItem('mcpx.csrf');
  if (why) sessionStorage.setItem('mcpx.ended', why);
  location.assign('/login?next=' + encodeURIComponent(location.pathname));
}

// request is fetch with the session's headers. A 401 (the session ended or
// its token was revoked) goes back to the sign-in page, which shows the
// broker's reason.
export async function request(path, opts = {}) {
  const headers = Object.assign({'Mcpx-Client': 'mcpx-dashboard', 'Mcpx-Csrf': csrf}, opts.headers || {});
  const r = await fetch(path, Object.assign({}, opts, {headers, credentials: 'same-origin', cache: 'no-store'}));
  if (!r.ok) {
    const p = await r.json().catch(() => ({}));
    if (r.status === 401) {
      toLogin(p.detail || p.title || 'the session ended');
    }
    throw new ProblemError(r.status, p);
  }
  return r;
}

// send is request with a method and, if given, a JSON body; it returns the
// answer's JSON, or null for none (204).
export async function send(method, path, body) {
  const opts = {method};
  if (body !== undefined) {
    opts.headers = {'Content-Type': 'application/json'};
    opts.body = JSON.stringify(body);
  }
  const r = await request(path, opts);
  return r.status === 204 ? null : r.json();
}

export async function getJSON(path) {
  return (await request(path)).json();
}

// events reads a server-sent event stream (fetch, not EventSource, which
// cannot send the CSRF header) and yields {event, id, data}.
export async function* events(resp) {
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const {value, done} = await reader.read();
    if (done) {
      return;
    }
    buf += value.replace(/\r\n?/g, '\n');
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const ev = {event: 'message', id: '', data: []};
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) {
          continue;
        }
        const i = line.indexOf(':');
        const field = i < 0 ? line : line.slice(0, i);
        let v = i < 0 ? '' : line.slice(i + 1);
        if (v.startsWith(' ')) {
          v = v.slice(1);
        }
        if (field === 'event') ev.event = v;
        else if (field === 'id') ev.id = v;
        else if (field === 'data') ev.data.push(v);
      }
      if (ev.data.length) {
        yield {event: ev.event, id: ev.id, data: ev.data.join('\n')};
      }
    }
  }
}

export async function signOut() {
  try {
    await request('/logout', {method: 'POST'});
  } finally {
    toLogin();
  }
}
