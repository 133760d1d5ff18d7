// The fleet: every broker GET /v1/fleet finds on the tailnet (this one
// first), its servers and instances, each linking to its own dashboard.
import {getJSON} from './api.js';
import {$, el} from './dom.js';

let loaded = false;

export function showFleet() {
  if (!loaded) {
    loaded = true;
    $('fleet-refresh').addEventListener('click', load);
  }
  load();
}

// dashboardURL is a broker's dashboard over the tailnet: its MagicDNS
// name, where `mcpx serve --tailnet` serves the API and the pages.
function dashboardURL(b) {
  return b.self ? '/' : `http://${b.dnsName.replace(/\.$/, '')}/`;
}

async function load() {
  const box = $('fleet');
  box.replaceChildren(el('p', {class: 'empty'}, 'asking the tailnet…'));
  let f;
  try {
    f = await getJSON('/v1/fleet');
  } catch (err) {
    box.replaceChildren(el('p', {class: 'error'}, err.message),
      err.problem && err.problem.hint ? el('p', {class: 'tag'}, err.problem.hint) : null);
    return;
  }
  box.replaceChildren(el('p', {class: 'tag'}, `As seen from ${f.node || 'this broker'}` +
    (f.probe ? ', every peer asked' : `, brokers tagged ${f.tag}`) + `: ${f.brokers.length} broker${f.brokers.length === 1 ? '' : 's'}`),
  el('div', {class: 'servers'}, f.brokers.map((b) => el('article', {class: 'card broker', 'data-broker': b.name || 'self'},
    el('header', {}, el('h3', {}, el('a', {href: dashboardURL(b), class: 'broker-link'}, b.name || 'this broker')),
      el('span', {class: `tag state-${b.state === 'ok' ? 'ready' : 'crashed'}`}, b.self ? 'this broker' : b.state),
      el('span', {class: 'tag'}, [b.dnsName, b.version && `mcpx ${b.version}`, b.online ? 'online' : 'offline'].filter(Boolean).join(' · '))),
    b.error ? el('p', {class: 'error'}, b.error) : null,
    b.caller ? el('p', {class: 'tag'}, `asked as ${b.caller}`) : null,
    (b.servers || []).length ? el('table', {}, el('thead', {}, el('tr', {}, el('th', {}, 'server'), el('th', {}, 'instances'))),
      el('tbody', {}, b.servers.map((s) => el('tr', {}, el('td', {}, s.name), el('td', {}, s.instances))))) :
      el('p', {class: 'empty'}, 'no servers it lets this broker see'),
    el('p', {class: 'tag'}, `${b.instances} instance${b.instances === 1 ? '' : 's'} running`)))));
}
