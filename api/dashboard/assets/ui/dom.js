// What every part of the dashboard shares: building elements, ages, the
// error and notice lines, and actions that ask first.
import {confirmAction} from './confirm.js';

export const $ = (id) => document.getElementById(id);

// el builds an element: el('td', {class: 'x'}, 'text', child...).
export function el(tag, attrs, ...kids) {
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

export function age(t) {
  if (!t || t.startsWith('0001-')) return '';
  const s = Math.max(0, (Date.now() - Date.parse(t)) / 1000);
  if (s < 60) return `${Math.floor(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600)}h`;
}

export function showError(err) {
  const box = $('error');
  if (err) {
    box.textContent = err.message;
    box.hidden = false;
  } else {
    box.hidden = true;
  }
}

export function notice(text) {
  const box = $('notice');
  box.textContent = text;
  box.hidden = !text;
}

// actionButton is a button that asks (question, with detail) and then
// runs fn, saying what happened (done(result) is the notice) or why not.
export function actionButton(label, attrs, question, detail, fn, done) {
  const b = el('button', Object.assign({type: 'button', class: 'action'}, attrs), label);
  b.addEventListener('click', async () => {
    if (!await confirmAction(question, label, detail)) return;
    b.disabled = true;
    try {
      const res = await fn();
      showError(null);
      notice(done(res));
    } catch (err) {
      notice('');
      showError(err);
    } finally {
      b.disabled = false;
    }
  });
  return b;
}
