// The live call stream: GET /v1/calls as it happens, newest first. Pause
// keeps the rows still while calls keep coming; they are shown on resume.
import {request, events, ProblemError} from './api.js';
import {$, el} from './dom.js';

const MAX_ROWS = 500;
let started = false;
let paused = false;
const held = []; // calls that came while paused, oldest first

export function startCalls() {
  if (started) return;
  started = true;
  $('calls-pause').addEventListener('click', () => {
    paused = !paused;
    $('calls-pause').textContent = paused ? 'Resume' : 'Pause';
    $('calls-pause').setAttribute('aria-pressed', String(paused));
    if (!paused) {
      for (const c of held.splice(0)) addRow(c);
    }
    state();
  });
  follow();
}

function state(text) {
  const live = $('calls-live');
  if (text) {
    live.textContent = text;
    live.classList.remove('on');
    return;
  }
  live.textContent = paused ? `paused, ${held.length} new` : 'live';
  live.classList.toggle('on', !paused);
}

function addRow(c) {
  const body = $('calls').tBodies[0];
  const ok = c.outcome === 'ok';
  body.prepend(el('tr', {'data-outcome': c.outcome, 'data-tool': `${c.server}.${c.tool || ''}`},
    el('td', {class: 'mono'}, new Date(c.time).toLocaleTimeString()), el('td', {}, c.server || '—'),
    el('td', {class: 'mono'}, c.tool || '—'), el('td', {class: 'opt'}, `${c.caller} (${c.via})`),
    el('td', {class: 'num'}, `${c.durationMs.toFixed(1)} ms`),
    el('td', {class: ok ? 'ok' : 'bad'}, ok ? 'ok' : c.error || c.outcome,
      c.dropped ? el('span', {class: 'tag'}, ` (${c.dropped} missed before)`) : null)));
  while (body.rows.length > MAX_ROWS) body.lastElementChild.remove();
}

async function follow() {
  for (let attempt = 0; attempt < 1e6; attempt++) {
    try {
      const r = await request('/v1/calls', {headers: {Accept: 'text/event-stream'}});
      attempt = 0;
      state();
      for await (const ev of events(r)) {
        if (ev.event !== 'call') continue;
        const c = JSON.parse(ev.data);
        if (paused) {
          held.push(c);
          held.splice(0, Math.max(0, held.length - MAX_ROWS));
        } else {
          addRow(c);
        }
        state();
      }
    } catch (err) {
      if (err instanceof ProblemError && err.status === 403) {
        state(err.message);
        return;
      }
    }
    state('reconnecting');
    await new Promise((res) => setTimeout(res, Math.min(30000, 1000 * 2 ** attempt)));
  }
}
