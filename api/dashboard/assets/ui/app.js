// The dashboard: the overview (traffic charts from the call log, servers
// with their instances, tool pins and "try it", sessions, failures, the
// lifecycle events), the live call stream, the fleet and the tokens, each
// a view of this one page (#overview, #calls, #fleet, #tokens). Everything
// comes from the /v1 API as the signed-in caller may see it, and every
// action is an API request the caller's rights decide, asked first.
import {request, getJSON, send, events, signOut, ProblemError} from './api.js';
import {$, el, age, showError, notice, actionButton} from './dom.js';
import {lineChart, seriesOf} from './chart.js';
import {tryIt} from './tryit.js';
import {startCalls} from './calls.js';
import {showFleet} from './fleet.js';
import {showTokens} from './tokens.js';
import {showOAuthClients} from './oauth.js';

const REFRESH_MS = 2000;
const CHART_MS = 10000;
const STATS_WINDOW = '15m';
const MAX_EVENTS = 200;
const MAX_FAILURES = 20;
const FAILURE_KINDS = new Set(['crash', 'backoff', 'wedged', 'reload-refused']);

let caller = null;
let instances = [];
let refreshFailed = false; // the error line shows refresh's failure
const cards = new Map(); // server name -> its card's parts
const failures = []; // from the event stream, newest first

function instanceTable(list) {
  if (!list.length) return el('p', {class: 'empty'}, 'no instances');
  const admin = caller && caller.admin;
  return el('div', {class: 'scroll'}, el('table', {class: 'instances'},
    el('thead', {}, el('tr', {}, el('th', {}, 'instance'), el('th', {}, 'scope key'), el('th', {class: 'opt'}, 'root'),
      el('th', {}, 'state'), el('th', {}, 'age'), el('th', {class: 'opt'}, 'calls'), el('th', {class: 'opt'}, 'pid'),
      admin ? el('th', {}, '') : null)),
    el('tbody', {}, list.map((i) => el('tr', {'data-instance': i.id},
      el('td', {class: 'mono'}, i.id), el('td', {class: 'key mono'}, i.key || '—'),
      el('td', {class: 'key mono opt'}, i.root || '—'),
      el('td', {class: `state-${i.state}`}, i.state, sandboxBadge(i)), el('td', {}, age(i.created)),
      el('td', {class: 'opt'}, i.calls), el('td', {class: 'opt'}, i.pid || '—'),
      admin ? el('td', {}, i.state === 'stopped' || i.state === 'stopping' ? '' :
        actionButton('Stop', {'data-action': 'stop'}, `Stop instance ${i.id} of ${i.server}?`,
          `Its calls in flight finish first; scope ${i.key}. The next call starts a new one.`,
          () => send('DELETE', `/v1/instances/${encodeURIComponent(i.id)}`), () => {
            refresh().catch(showError);
            return `stopped ${i.server} instance ${i.id}`;
          })) : null)))));
}

// sandboxBadge marks a confined instance (docs/sandbox.md): why it is
// confined, and what the kernel does not enforce of it, on hover.
function sandboxBadge(i) {
  const sb = i.sandbox;
  if (!sb) return null;
  const missing = (sb.enforcement || []).filter((f) => f.needed && !f.enforced).map((f) => f.name);
  const title = `confined (${sb.why}), network ${sb.network}` + (missing.length ? `; NOT enforced: ${missing.join(', ')}` : '') +
    (sb.limit ? `; last child ended by ${sb.limit}` : '');
  return el('span', {class: missing.length ? 'badge sandbox partial' : 'badge sandbox', title}, 'confined');
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
  const charts = el('div', {class: 'charts small'});
  const instancesBox = el('div', {});
  const count = el('span', {class: 'tag'});
  const pins = el('div', {class: 'pins'});
  const restart = caller.admin ? actionButton('Restart', {'data-action': 'restart'}, `Restart every instance of ${server.name}?`,
    'Calls in flight finish on the old children; new calls go to new ones.',
    () => send('POST', `/v1/servers/${encodeURIComponent(server.name)}/restart`),
    (res) => {
      refresh().catch(showError);
      return `restarted ${res.server}: ${res.replaced.length} replaced, ${res.stopped.length} stopped`;
    }) : null;
  const signin = el('span', {class: 'signin'});
  const roots = () => [...new Set(instances.filter((i) => i.server === server.name && i.root).map((i) => i.root))];
  const root = el('article', {class: 'card server', 'data-server': server.name},
    el('header', {}, el('h3', {}, server.name), el('span', {class: 'tag'}, `${server.transport} · scope ${server.scope} · sharing ${server.sharing}`),
      count, signin, restart),
    server.description ? el('p', {class: 'tag'}, server.description) : null,
    pins, stats, charts, instancesBox, tryIt(server, roots));
  c = {root, stats, charts, instances: instancesBox, count, pins, signin};
  cards.set(server.name, c);
  $('servers').append(root);
  return c;
}

async function refresh() {
  const [servers, inst, sess, stats, pins, signIns] = await Promise.allSettled([
    getJSON('/v1/servers'), getJSON('/v1/instances'), getJSON('/v1/sessions'),
    caller.admin ? getJSON(`/v1/stats?by=server&since=${STATS_WINDOW}`) : Promise.resolve(null),
    caller.admin ? getJSON('/v1/pins') : Promise.resolve(null),
    getJSON('/v1/auth'),
  ]);
  // The caller's own sign-in of each url server: the first listed.
  const authOf = new Map();
  for (const a of signIns.status === 'fulfilled' ? signIns.value.servers : []) {
    if (!authOf.has(a.server)) authOf.set(a.server, a);
  }
  const pinsOf = new Map((pins.status === 'fulfilled' && pins.value ? pins.value.servers : []).map((p) => [p.server, p]));
  const firstError = [servers, inst, sess].find((r) => r.status === 'rejected');
  if (firstError) {
    showError(firstError.reason);
    refreshFailed = true;
  } else if (refreshFailed) {
    showError(null);
    refreshFailed = false;
  }
  if (servers.status !== 'fulfilled') return;
  instances = inst.status === 'fulfilled' ? inst.value.instances : [];
  const rows = new Map((stats.status === 'fulfilled' && stats.value ? stats.value.rows : []).map((r) => [r.key, r]));
  for (const s of servers.value.servers) {
    const c = card(s);
    const mine = instances.filter((i) => i.server === s.name);
    c.count.textContent = `${mine.length} instance${mine.length === 1 ? '' : 's'}`;
    c.stats.textContent = statsLine(rows.get(s.name));
    c.instances.replaceChildren(instanceTable(mine));
    c.pins.replaceChildren(...pinsNote(s.name, pinsOf.get(s.name)));
    const a = authOf.get(s.name);
    if (!a || a.signedIn) c.signin.replaceChildren();
    else if (!c.signin.firstChild) c.signin.replaceChildren(signInButton(s.name, c.signin, a));
  }
  if (sess.status === 'fulfilled') renderSessions(sess.value.sessions);
  renderFailures(instances);
}

// charts draws the last hour of calls from the call log: calls/s and p95
// latency per server at the top, per tool in each server's card.
async function charts() {
  if (!caller.admin) {
    $('traffic').replaceChildren(el('p', {class: 'empty'}, 'the call log’s figures are for admins'));
    return;
  }
  const [byServer, byTool] = await Promise.all([getJSON('/v1/stats?by=server&since=1h&step=1m'),
    getJSON('/v1/stats?by=tool&since=1h&step=1m')]);
  const now = Date.now();
  const all = seriesOf(byServer, byServer.rows, now);
  $('traffic').replaceChildren(
    lineChart({title: 'Calls per second by server', unit: 'calls/s', from: all.from, step: all.step, series: all.rate}),
    lineChart({title: 'p95 latency by server', unit: 'ms', from: all.from, step: all.step, series: all.p95}));
  for (const [name, c] of cards) {
    const rows = byTool.rows.filter((r) => r.key.startsWith(name + '.'))
      .map((r) => Object.assign({}, r, {key: r.key.slice(name.length + 1)}));
    if (!rows.length) {
      c.charts.replaceChildren();
      continue;
    }
    const s = seriesOf(byTool, rows, now);
    c.charts.replaceChildren(
      lineChart({title: `${name}: calls per second by tool`, unit: 'calls/s', from: s.from, step: s.step, series: s.rate}),
      lineChart({title: `${name}: p95 latency by tool`, unit: 'ms', from: s.from, step: s.step, series: s.p95}));
  }
}

// signInButton begins the caller's sign-in to a url server (docs/oauth.md):
// the authorization server sends the browser back to this daemon's own
// redirect route, so it works where the dashboard is on loopback TCP; the
// link opens in a tab of its own, and the next refresh drops the button.
function signInButton(server, box, status) {
  return actionButton('Sign in', {'data-action': 'sign-in'}, `Sign in to ${server}?`,
    status.reason ? `Calls need it: ${status.reason}.` : 'Its calls need a sign-in at its authorization server.',
    () => send('POST', `/v1/servers/${encodeURIComponent(server)}/auth/login`, {redirectUri: `${location.origin}/v1/auth/redirect`}),
    (res) => {
      box.replaceChildren(el('a', {href: res.authorizationUrl, target: '_blank', rel: 'noopener noreferrer', 'data-action': 'sign-in-link'},
        `open ${server}'s sign-in page`));
      return `signing in to ${server}: open its sign-in page; this page notices when it is done`;
    });
}

// pinsNote is a server's tools not approved (docs/trust.md, "Tool pins"),
// their diffs, and the button that approves them as they are shown.
function pinsNote(server, pins) {
  if (!pins || !pins.unapproved) return [];
  const tools = pins.tools.filter((t) => t.state !== 'approved');
  const what = tools.map((t) => `${t.name} ${t.state}${t.withheld ? ' (withheld)' : ''}${t.flags ? ' flagged ' + t.flags.join(',') : ''}`);
  const approve = actionButton('Approve', {'data-action': 'approve'}, `Approve ${what.length === 1 ? 'the tool' : 'the tools'} of ${server} as listed now?`,
    `${what.join('; ')}. Callers are served the new definitions at once.`,
    // Each tool as shown, by its hash: one that changed since is refused,
    // never approved unseen.
    async () => {
      const approved = [];
      for (const t of tools) {
        const res = await send('POST', `/v1/servers/${encodeURIComponent(server)}/pins/approve`, t.hash ? {tool: t.name, hash: t.hash} : {tool: t.name});
        approved.push(...res.approved);
      }
      return {approved};
    },
    (res) => {
      refresh().catch(showError);
      return `approved ${res.approved.join(', ')} of ${server}`;
    });
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

// renderFailures lists each failure once: an event (a crash, backoff,
// wedged child or refused reload) with its time and stderr, and an
// instance's last error only when no event of that instance tells it.
function renderFailures(list) {
  const told = new Set(failures.map((e) => e.instance).filter(Boolean));
  const items = failures.map((e) => el('li', {class: 'failure', 'data-kind': e.kind},
    el('strong', {}, [e.server, e.kind, e.instance].filter(Boolean).join(' ')),
    ` ${new Date(e.time).toLocaleTimeString()} ${e.reason || ''}`, e.stderrTail ? el('pre', {}, e.stderrTail) : null));
  for (const i of list) {
    if (!i.lastError || told.has(i.id)) continue;
    items.push(el('li', {class: 'failure', 'data-kind': 'instance'}, el('strong', {}, `${i.server} ${i.state} ${i.id}`),
      ` ${new Date(i.lastUsed).toLocaleTimeString()} ${i.lastError}`, i.stderrTail ? el('pre', {}, i.stderrTail) : null));
  }
  $('failures').replaceChildren(items.length ? el('ul', {}, items) : el('p', {class: 'empty'}, 'no failures'));
}

// follow streams the lifecycle events, resuming after a dropped stream.
async function follow() {
  let last = '';
  for (let attempt = 0; attempt < 1e6; attempt++) {
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
  if (FAILURE_KINDS.has(kind)) {
    // A crash followed by backoff of the same instance is one failure:
    // the backoff adds its "until" to the crash's entry.
    const prev = failures.find((f) => f.instance && f.instance === e.instance && f.kind === 'crash');
    if (kind === 'backoff' && prev) {
      prev.reason = [prev.reason, `backing off until ${new Date(e.until).toLocaleTimeString()}`].filter(Boolean).join('; ');
      prev.stderrTail = prev.stderrTail || e.stderrTail;
    } else if (!failures.some((f) => f.id === e.id)) {
      failures.unshift(e);
      failures.length = Math.min(failures.length, MAX_FAILURES);
    }
  }
  if (kind !== 'gap') refresh().catch(showError);
}

// show makes the view named by the location's hash the one shown.
function show() {
  const view = (location.hash || '#overview').slice(1);
  const known = [...document.querySelectorAll('[data-view]')].map((v) => v.dataset.view);
  const name = known.includes(view) ? view : 'overview';
  for (const v of document.querySelectorAll('[data-view]')) v.hidden = v.dataset.view !== name;
  for (const a of document.querySelectorAll('[data-nav]')) a.classList.toggle('current', a.dataset.nav === name);
  notice('');
  if (name === 'calls') startCalls();
  if (name === 'fleet') showFleet();
  if (name === 'tokens') {
    showTokens().catch(showError);
    showOAuthClients().catch(showError);
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
  if (caller.admin) {
    const reload = $('reload');
    reload.hidden = false;
    reload.replaceWith(actionButton('Reload config', {id: 'reload', 'data-action': 'reload'}, 'Reload the config file?',
      'A config with errors is refused and the running one kept; servers whose definitions changed are replaced.',
      () => send('POST', '/v1/daemon/reload'), (res) => {
        refresh().catch(showError);
        return `reloaded ${res.config || 'the built-in config'}: ${res.servers} server${res.servers === 1 ? '' : 's'}`;
      }));
  }
  window.addEventListener('hashchange', show);
  show();
  await refresh().catch(showError);
  charts().catch(showError);
  setInterval(() => refresh().catch(showError), REFRESH_MS);
  setInterval(() => charts().catch(showError), CHART_MS);
  follow();
}

main();
