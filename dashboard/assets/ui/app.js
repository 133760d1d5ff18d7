// The dashboard: servers with their instances (scope keys, roots, ages,
// states), call rates and latency, a "try it" form per tool generated from
// the server's OpenAPI document, sessions, recent failures and the live
// lifecycle events. Everything comes from the /v1 API as the signed-in
// caller may see it; nothing is cached outside this page.
import {request, getJSON, events, signOut, ProblemError} from './api.js';

const REFRESH_MS = 2000;
const STATS_WINDOW = '15m';
const MAX_EVENTS = 200;
const MAX_FAILURES = 20;

const $ = (id) => document.getElementById(id);
let caller = null;
const cards = new Map(); // server name -> its card's parts
const failures = []; // from the event stream: crash, backoff, wedged, reload-refused

// el builds an element: el('td', {class: 'x'}, 'text', child...).
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) {
    if (k !== undefined && k !== null && k !== false) e.append(k instanceof Node ? k : String(k));
  }
  return e;
}

function age(t) {
  if (!t || t.startsWith('0001-')) return '';
  const s = Math.max(0, (Date.now() - Date.parse(t)) / 1000);
  if (s < 60) return `${Math.floor(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600)}h`;
}

function showError(err) {
  const box = $('error');
  if (err) {
    box.textContent = err.message;
    box.hidden = false;
  } else {
    box.hidden = true;
  }
}

function instanceTable(list) {
  if (!list.length) return el('p', {class: 'empty'}, 'no instances');
  return el('div', {class: 'scroll'}, el('table', {class: 'instances'},
    el('thead', {}, el('tr', {}, el('th', {}, 'instance'), el('th', {}, 'scope key'), el('th', {class: 'opt'}, 'root'),
      el('th', {}, 'state'), el('th', {}, 'age'), el('th', {class: 'opt'}, 'calls'), el('th', {class: 'opt'}, 'pid'))),
    el('tbody', {}, list.map((i) => el('tr', {'data-instance': i.id},
      el('td', {class: 'mono'}, i.id), el('td', {class: 'key mono'}, i.key || '—'),
      el('td', {class: 'key mono opt'}, i.root || '—'),
      el('td', {class: `state-${i.state}`}, i.state), el('td', {}, age(i.created)),
      el('td', {class: 'opt'}, i.calls), el('td', {class: 'opt'}, i.pid || '—'))))));
}

function statsLine(row) {
  if (!row) return caller && caller.admin ? `no calls in the last ${STATS_WINDOW}` : '';
  const perMin = row.count / 15; // STATS_WINDOW in minutes
  return `${row.count} call${row.count === 1 ? '' : 's'} in the last ${STATS_WINDOW} (${perMin.toFixed(perMin < 10 ? 1 : 0)}/min), ` +
    `p50 ${row.p50Ms.toFixed(1)} ms, p95 ${row.p95Ms.toFixed(1)} ms, ${row.failures} failed`;
}

function card(server) {
  let c = cards.get(server.name);
  if (c) return c;
  const stats = el('p', {class: 'stats'});
  const instances = el('div', {});
  const forms = el('div', {});
  const tryit = el('details', {class: 'tryit'}, el('summary', {}, 'Try a tool'), forms);
  tryit.addEventListener('toggle', () => {
    if (tryit.open && !forms.childElementCount) buildForms(server.name, forms);
  });
  const count = el('span', {class: 'tag'});
  const pins = el('div', {class: 'pins'});
  const root = el('article', {class: 'card server', 'data-server': server.name},
    el('header', {}, el('h3', {}, server.name), el('span', {class: 'tag'}, `${server.transport} · scope ${server.scope} · sharing ${server.sharing}`), count),
    server.description ? el('p', {class: 'tag'}, server.description) : null,
    pins, stats, instances, tryit);
  c = {root, stats, instances, count, pins};
  cards.set(server.name, c);
  $('servers').append(root);
  return c;
}

async function refresh() {
  const [servers, inst, sess, stats, pins] = await Promise.allSettled([
    getJSON('/v1/servers'), getJSON('/v1/instances'), getJSON('/v1/sessions'),
    caller.admin ? getJSON(`/v1/stats?by=server&since=${STATS_WINDOW}`) : Promise.resolve(null),
    caller.admin ? getJSON('/v1/pins') : Promise.resolve(null),
  ]);
  const pinsOf = new Map((pins.status === 'fulfilled' && pins.value ? pins.value.servers : []).map((p) => [p.server, p]));
  const firstError = [servers, inst, sess].find((r) => r.status === 'rejected');
  showError(firstError && firstError.reason);
  if (servers.status !== 'fulfilled') return;
  const list = inst.status === 'fulfilled' ? inst.value.instances : [];
  const rows = new Map((stats.status === 'fulfilled' && stats.value ? stats.value.rows : []).map((r) => [r.key, r]));
  for (const s of servers.value.servers) {
    const c = card(s);
    const mine = list.filter((i) => i.server === s.name);
    c.count.textContent = `${mine.length} instance${mine.length === 1 ? '' : 's'}`;
    c.stats.textContent = statsLine(rows.get(s.name));
    c.instances.replaceChildren(instanceTable(mine));
    c.pins.replaceChildren(...pinsNote(s.name, pinsOf.get(s.name)));
  }
  if (sess.status === 'fulfilled') renderSessions(sess.value.sessions);
  renderFailures(list);
}

// pinsNote is a server's tools not approved (docs/trust.md, "Tool pins"),
// their diffs, and the button that approves them all.
function pinsNote(server, pins) {
  if (!pins || !pins.unapproved) return [];
  const tools = pins.tools.filter((t) => t.state !== 'approved');
  const approve = el('button', {type: 'button'}, 'Approve');
  approve.addEventListener('click', async () => {
    approve.disabled = true;
    try {
      await request(`/v1/servers/${encodeURIComponent(server)}/pins/approve`,
        {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{}'});
      await refresh();
    } catch (err) {
      showError(err);
      approve.disabled = false;
    }
  });
  const what = tools.map((t) => `${t.name} ${t.state}${t.withheld ? ' (withheld)' : ''}${t.flags ? ' flagged ' + t.flags.join(',') : ''}`);
  return [el('p', {class: 'error'}, `Tools not approved: ${what.join(', ')} `, approve),
    ...tools.filter((t) => t.diff).map((t) => el('details', {}, el('summary', {}, `${t.name}: what changed`), el('pre', {}, t.diff)))];
}

function renderSessions(list) {
  if (!list.length) {
    $('sessions').replaceChildren(el('p', {class: 'empty'}, 'no sessions'));
    return;
  }
  $('sessions').replaceChildren(el('div', {class: 'scroll'}, el('table', {},
    el('thead', {}, el('tr', {}, el('th', {}, 'key'), el('th', {}, 'scope'), el('th', {class: 'opt'}, 'creator'),
      el('th', {}, 'age'), el('th', {class: 'opt'}, 'last used'), el('th', {class: 'opt'}, 'calls'), el('th', {}, 'instances'))),
    el('tbody', {}, list.map((s) => el('tr', {},
      el('td', {class: 'key mono'}, s.name ? `${s.name} (${s.key})` : s.key), el('td', {}, s.scope),
      el('td', {class: 'opt'}, `${s.creator.name} via ${s.creator.via}`), el('td', {}, age(s.created)),
      el('td', {class: 'opt'}, age(s.lastUsed) + ' ago'), el('td', {class: 'opt'}, s.calls),
      el('td', {}, s.instances.map((i) => `${i.server} ${i.state}`).join(', '))))))));
}

function renderFailures(list) {
  const items = [];
  for (const i of list) {
    if (!i.lastError) continue;
    items.push(el('li', {class: 'failure'}, el('strong', {}, `${i.server} ${i.id}`), ` ${i.state}: ${i.lastError}`,
      i.stderrTail ? el('pre', {}, i.stderrTail) : null));
  }
  for (const e of failures) {
    items.push(el('li', {class: 'failure'}, el('strong', {}, `${e.server || ''} ${e.kind}`),
      ` ${new Date(e.time).toLocaleTimeString()} ${e.reason || ''}`, e.stderrTail ? el('pre', {}, e.stderrTail) : null));
  }
  $('failures').replaceChildren(items.length ? el('ul', {}, items) : el('p', {class: 'empty'}, 'no failures'));
}

// follow streams the lifecycle events, resuming after a dropped stream.
async function follow() {
  let last = '';
  for (let attempt = 0; ; attempt++) {
    try {
      const headers = {Accept: 'text/event-stream'};
      if (last) headers['Last-Event-ID'] = last;
      const r = await request('/v1/events', {headers});
      $('live').textContent = 'live';
      $('live').classList.add('on');
      attempt = 0;
      for await (const ev of events(r)) {
        last = ev.id || last;
        addEvent(ev.event, JSON.parse(ev.data));
      }
    } catch (err) {
      if (err instanceof ProblemError && err.status === 403) {
        $('live').textContent = err.message;
        return;
      }
    }
    $('live').textContent = 'reconnecting';
    $('live').classList.remove('on');
    await new Promise((res) => setTimeout(res, Math.min(30000, 1000 * 2 ** attempt)));
  }
}

function addEvent(kind, e) {
  const list = $('events');
  const t = e.time ? new Date(e.time).toLocaleTimeString() : '';
  const what = kind === 'gap' ? `${e.lost} events lost` :
    [e.server, e.key, e.instance, e.pid ? `pid ${e.pid}` : '', e.reason, e.tool, e.change,
      e.flags ? 'flagged ' + e.flags.join(',') : ''].filter(Boolean).join(' · ');
  list.prepend(el('li', {'data-kind': kind}, el('span', {class: 'mono'}, t), ' ',
    el('span', {class: `kind kind-${kind}`}, kind), ' ', what));
  while (list.childElementCount > MAX_EVENTS) list.lastElementChild.remove();
  if (kind === 'crash' || kind === 'backoff' || kind === 'wedged' || kind === 'reload-refused') {
    failures.unshift(e);
    failures.length = Math.min(failures.length, MAX_FAILURES);
  }
  if (kind !== 'gap') refresh().catch(showError);
}

// buildForms makes one form per tool from the server's OpenAPI document:
// a field per top-level argument of a simple type, JSON for the rest.
async function buildForms(server, into) {
  into.replaceChildren(el('p', {class: 'empty'}, 'loading tools…'));
  let doc;
  try {
    doc = await getJSON(`/v1/servers/${encodeURIComponent(server)}/openapi.json`);
  } catch (err) {
    into.replaceChildren(el('p', {class: 'error'}, err.message));
    return;
  }
  const forms = [];
  for (const item of Object.values(doc.paths || {})) {
    const op = item.post;
    if (op && op['x-mcp-tool']) forms.push(toolForm(server, op, doc));
  }
  into.replaceChildren(...(forms.length ? forms : [el('p', {class: 'empty'}, 'no tools')]));
}

function resolve(schema, doc) {
  for (let i = 0; schema && schema.$ref && i < 16; i++) {
    const name = decodeURIComponent(schema.$ref.replace(/^#\/components\/schemas\//, ''));
    schema = ((doc.components || {}).schemas || {})[name];
  }
  return schema || {};
}

function toolForm(server, op, doc) {
  const tool = op['x-mcp-tool'];
  const schema = resolve(((op.requestBody || {}).content || {})['application/json']?.schema, doc);
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  const fields = [];
  for (const [name, raw] of Object.entries(props)) {
    const p = resolve(raw, doc);
    const label = `${name}${required.has(name) ? ' *' : ''}`;
    const common = {name, 'data-type': p.type || 'json', required: required.has(name) && p.type !== 'boolean'};
    let input;
    if (Array.isArray(p.enum)) {
      input = el('select', common, required.has(name) ? null : el('option', {value: ''}, ''),
        p.enum.map((v) => el('option', {value: JSON.stringify(v)}, String(v))));
      input.dataset.type = 'enum';
    } else if (p.type === 'boolean') {
      input = el('input', Object.assign({type: 'checkbox'}, common, {checked: p.default === true}));
    } else if (p.type === 'integer' || p.type === 'number') {
      input = el('input', Object.assign({type: 'number', step: p.type === 'integer' ? '1' : 'any',
        min: p.minimum, max: p.maximum, value: p.default}, common));
    } else if (p.type === 'string') {
      input = el('input', Object.assign({type: 'text', value: p.default}, common));
    } else {
      input = el('textarea', Object.assign({placeholder: 'JSON'}, common, {'data-type': 'json'}),
        p.default !== undefined ? JSON.stringify(p.default) : '');
    }
    fields.push(el('label', {}, el('span', {}, label, p.description ? el('span', {class: 'tag'}, ` — ${p.description}`) : null), input));
  }
  const cwd = el('input', {type: 'text', name: '_cwd', placeholder: 'Mcpx-Cwd: a directory on the broker (optional)'});
  const progress = el('progress', {hidden: true});
  const status = el('p', {class: 'tag status', 'aria-live': 'polite'});
  const result = el('pre', {class: 'result', hidden: true});
  const button = el('button', {type: 'submit', class: 'primary'}, `Call ${tool}`);
  const form = el('form', {class: 'tool', 'data-tool': tool},
    op.summary ? el('p', {class: 'desc'}, op.summary) : null,
    fields, el('label', {}, el('span', {}, 'cwd'), cwd), button, progress, status, result);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    let args;
    try {
      args = readArgs(form);
    } catch (err) {
      status.textContent = err.message;
      return;
    }
    button.disabled = true;
    result.hidden = true;
    status.textContent = 'calling…';
    progress.hidden = false;
    progress.removeAttribute('value');
    try {
      await call(server, tool, args, cwd.value.trim(), {progress, status, result});
    } finally {
      button.disabled = false;
    }
  });
  return el('details', {class: 'tool', 'data-tool': tool}, el('summary', {class: 'mono'}, tool), form);
}

function readArgs(form) {
  const args = {};
  for (const input of form.querySelectorAll('[data-type]')) {
    const {name} = input;
    const t = input.dataset.type;
    if (t === 'boolean') {
      if (input.checked || input.required) args[name] = input.checked;
      continue;
    }
    const v = input.value;
    if (v === '') continue;
    if (t === 'integer' || t === 'number') args[name] = Number(v);
    else if (t === 'string') args[name] = v;
    else {
      try {
        args[name] = JSON.parse(v);
      } catch {
        throw new Error(`${name}: not valid JSON`);
      }
    }
  }
  return args;
}

// call runs the tool as an event stream, showing each progress event.
async function call(server, tool, args, cwd, ui) {
  const headers = {'Content-Type': 'application/json', Accept: 'text/event-stream'};
  if (cwd) headers['Mcpx-Cwd'] = cwd;
  const show = (cls, text) => {
    ui.result.className = `result ${cls}`;
    ui.result.textContent = text;
    ui.result.hidden = false;
  };
  try {
    const r = await request(`/v1/servers/${encodeURIComponent(server)}/tools/${encodeURIComponent(tool)}`,
      {method: 'POST', headers, body: JSON.stringify(args)});
    let steps = 0;
    for await (const ev of events(r)) {
      const data = JSON.parse(ev.data);
      if (ev.event === 'progress') {
        steps++;
        if (data.total) {
          ui.progress.max = data.total;
          ui.progress.value = data.progress;
        }
        ui.status.textContent = `progress ${data.progress}${data.total ? ' of ' + data.total : ''}` +
          (data.message ? `: ${data.message}` : '');
        ui.status.dataset.progressEvents = String(steps);
      } else if (ev.event === 'result') {
        ui.status.textContent = (data.isError ? 'the tool reported an error' : 'done') +
          (steps ? ` after ${steps} progress event${steps === 1 ? '' : 's'}` : '');
        show(data.isError ? 'error' : 'ok', JSON.stringify(data, null, 2));
      } else if (ev.event === 'error') {
        ui.status.textContent = 'failed';
        show('error', [data.detail || data.title, data.stderrTail].filter(Boolean).join('\n\n'));
      }
    }
  } catch (err) {
    ui.status.textContent = 'failed';
    show('error', [err.message, err.problem && err.problem.stderrTail].filter(Boolean).join('\n\n'));
  } finally {
    ui.progress.hidden = true;
  }
}

async function main() {
  $('signout').addEventListener('click', signOut);
  try {
    const who = await getJSON('/v1/whoami');
    caller = who.caller;
    $('who').textContent = `${caller.name} (${caller.via}${caller.owner ? ', owner' : caller.admin ? ', admin' : ''}) · mcpx ${who.version}`;
  } catch (err) {
    showError(err);
    return;
  }
  await refresh().catch(showError);
  setInterval(() => refresh().catch(showError), REFRESH_MS);
  follow();
}

main();
