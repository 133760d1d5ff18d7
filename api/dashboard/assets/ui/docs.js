// /docs: the broker's OpenAPI document, fetched with the browser session's
// credentials and rendered by the vendored Redoc bundle.
import {init} from './redoc.standalone.js';
import {getJSON} from './api.js';

// Redoc's attribution loads its logo from its CDN, and nothing on these
// pages may load from another origin (the content security policy would
// refuse it anyway, and report it): an image source elsewhere is dropped
// before the browser sees it, so no request is even tried. The bundle
// stays byte for byte the pinned one (THIRD_PARTY.md).
function local(value) {
  const u = new URL(String(value), location.href);
  return u.origin === location.origin || u.protocol === 'data:';
}
const setAttribute = Element.prototype.setAttribute;
Element.prototype.setAttribute = function (name, value) {
  if (this instanceof HTMLImageElement && String(name).toLowerCase() === 'src' && !local(value)) return;
  setAttribute.call(this, name, value);
};
const src = Object.getOwnPropertyDescriptor(HTMLImageElement.prototype, 'src');
Object.defineProperty(HTMLImageElement.prototype, 'src', {
  configurable: true, enumerable: src.enumerable, get: src.get,
  set(value) {
    if (local(value)) src.set.call(this, value);
  },
});

try {
  const doc = await getJSON('/openapi.json');
  init(doc, {disableTelemetry: true, hideDownloadButtons: true}, document.getElementById('redoc'));
} catch (err) {
  const box = document.getElementById('error');
  box.textContent = `cannot load the API description: ${err.message}`;
  box.hidden = false;
}
