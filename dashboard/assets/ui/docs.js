// /docs: the broker's OpenAPI document, fetched with the browser session's
// credentials and rendered by the vendored Redoc bundle.
import {init} from './redoc.standalone.js';
import {getJSON} from './api.js';

try {
  const doc = await getJSON('/openapi.json');
  init(doc, {disableTelemetry: true, hideDownloadButtons: true}, document.getElementById('redoc'));
} catch (err) {
  const box = document.getElementById('error');
  box.textContent = `cannot load the API description: ${err.message}`;
  box.hidden = false;
}
