// confirmAction asks, in the page's own dialog, whether to do what text
// says; it resolves true only for the confirm button.
const dialog = document.getElementById('confirm');

export function confirmAction(text, label, detail = '') {
  document.getElementById('confirm-text').textContent = text;
  document.getElementById('confirm-detail').textContent = detail;
  const ok = document.getElementById('confirm-ok');
  const cancel = document.getElementById('confirm-cancel');
  ok.textContent = label;
  return new Promise((resolve) => {
    const done = (v) => {
      ok.removeEventListener('click', yes);
      cancel.removeEventListener('click', no);
      dialog.removeEventListener('cancel', no);
      if (dialog.open) dialog.close();
      resolve(v);
    };
    const yes = () => done(true);
    const no = () => done(false);
    ok.addEventListener('click', yes);
    cancel.addEventListener('click', no);
    dialog.addEventListener('cancel', no);
    dialog.showModal();
    cancel.focus();
  });
}
