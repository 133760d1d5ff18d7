// Tokens: the signed tokens not yet expired, each revocable (asking first).
import {getJSON, send} from './api.js';
import {$, el, actionButton, showError} from './dom.js';

export async function showTokens() {
  const box = $('tokens');
  let list;
  try {
    list = await getJSON('/v1/tokens');
  } catch (err) {
    box.replaceChildren(el('p', {class: 'error'}, err.message));
    return;
  }
  const tokens = list.tokens || [];
  if (!tokens.length) {
    box.replaceChildren(el('p', {class: 'empty'}, 'no signed tokens (mint one with `mcpx token mint`)'));
    return;
  }
  box.replaceChildren(el('div', {class: 'scroll'}, el('table', {class: 'tokens'},
    el('thead', {}, el('tr', {}, el('th', {}, 'subject'), el('th', {class: 'opt'}, 'id'), el('th', {class: 'opt'}, 'minted by'),
      el('th', {}, 'expires'), el('th', {}, ''))),
    el('tbody', {}, tokens.map((tk) => el('tr', {'data-token': tk.id},
      el('td', {}, tk.sub), el('td', {class: 'mono opt'}, tk.id), el('td', {class: 'opt'}, tk.minter ? tk.minter.name : ''),
      el('td', {}, tk.revoked ? 'revoked' : new Date(tk.expiresAt).toLocaleString()),
      el('td', {}, tk.revoked ? '' : actionButton('Revoke', {'data-action': 'revoke'}, `Revoke the token of ${tk.sub}?`,
        'Every browser and client using it is signed out at its next request. This cannot be undone.',
        () => send('DELETE', `/v1/tokens/${encodeURIComponent(tk.id)}`),
        () => {
          showTokens().catch(showError);
          return `revoked the token of ${tk.sub}`;
        }))))))));
}
