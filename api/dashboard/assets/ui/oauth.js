// OAuth clients of the public face (the owner's only): each client with
// how it registered, where it returns to and its live tokens; revoking a
// client signs out every sign-in it holds, revoking a token its sign-in.
// Hidden when the caller is not the owner, and when no public face runs.
import {getJSON, send} from './api.js';
import {$, el, actionButton, showError} from './dom.js';

export async function showOAuthClients() {
  const section = $('oauth-section');
  const box = $('oauth');
  let list;
  try {
    list = await getJSON('/v1/public/clients');
  } catch (err) {
    if (err.status === 403) {
      section.hidden = true;
      return;
    }
    section.hidden = false;
    box.replaceChildren(el('p', {class: 'error'}, err.message));
    return;
  }
  section.hidden = !list.served;
  const clients = list.clients || [];
  if (!clients.length) {
    box.replaceChildren(el('p', {class: 'empty'}, list.issuer ?
      `tokens come from ${list.issuer}: revoke them there` : 'no OAuth client has signed in'));
    return;
  }
  box.replaceChildren(el('div', {class: 'scroll'}, el('table', {class: 'tokens oauth'},
    el('thead', {}, el('tr', {}, el('th', {}, 'client'), el('th', {class: 'opt'}, 'id'), el('th', {}, 'registered by'),
      el('th', {}, 'returns to'), el('th', {}, 'tokens'), el('th', {}, ''))),
    el('tbody', {}, clients.flatMap(clientRows)))));
}

function clientRows(c) {
  const name = c.name || c.id;
  const row = el('tr', {'data-client': c.id},
    el('td', {}, name), el('td', {class: 'mono opt'}, c.id), el('td', {}, c.registration),
    el('td', {}, (c.redirectHosts || []).join(', ')), el('td', {}, `${(c.tokens || []).length} live, ${c.signIns} sign-ins`),
    el('td', {}, revokeButton(c.id, `Revoke the OAuth client ${name}?`,
      'Every token it holds stops working at its next request, it cannot refresh, and it must register and sign in again.',
      `revoked the OAuth client ${name}`)));
  const tokens = (c.tokens || []).map((tk) => el('tr', {'data-oauth-token': tk.id},
    el('td', {class: 'tag'}, `token of ${name}`), el('td', {class: 'mono opt'}, tk.id), el('td', {}, tk.approver ? `approved by ${tk.approver}` : ''),
    el('td', {}, tk.resource), el('td', {}, `expires ${new Date(tk.expires).toLocaleString()}`),
    el('td', {}, revokeButton(tk.id, `Revoke this sign-in of ${name}?`,
      'Its token and refresh token stop working at their next use; its other sign-ins stay.', `revoked a sign-in of ${name}`))));
  return [row, ...tokens];
}

function revokeButton(id, question, detail, done) {
  return actionButton('Revoke', {'data-action': 'revoke-oauth'}, question, detail,
    () => send('POST', '/v1/public/revoke', {id}),
    () => {
      showOAuthClients().catch(showError);
      return done;
    });
}
