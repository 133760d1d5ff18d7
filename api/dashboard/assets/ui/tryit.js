// "Try it": one form per tool, generated from the server's OpenAPI
// document, a cwd for the server shared by its forms, and the result
// rendered — text, images, embedded resources and links, structured
// content — with the raw JSON one click away.
import {request, getJSON, events} from './api.js';
import {el} from './dom.js';

// Scopes whose key comes from the caller's cwd: without one, each call
// gets a child of its own (a call: key) that ends with the call.
const CWD_SCOPES = new Set(['worktree', 'repo', 'cwd']);

// tryIt returns the "Try a tool" part of a server's card. roots() lists
// the roots of the server's instances, offered as cwds.
export function tryIt(server, roots) {
  const forms = el('div', {});
  const saved = localStorage.getItem(`mcpx.cwd.${server.name}`) || '';
  const list = el('datalist', {id: `cwds-${server.name}`});
  const cwd = el('input', {type: 'text', name: 'cwd', value: saved, list: list.id, spellcheck: 'false',
    placeholder: 'a directory on the broker’s machine, sent as Mcpx-Cwd'});
  const needs = CWD_SCOPES.has(server.scope);
  const hint = el('p', {class: 'tag cwd-hint'});
  const update = () => {
    localStorage.setItem(`mcpx.cwd.${server.name}`, cwd.value.trim());
    hint.textContent = needs && !cwd.value.trim() ?
      `${server.name} is scoped by ${server.scope}: without a cwd each call starts a throwaway child (a call: scope). ` +
      'Give a directory of the worktree to share its instance.' :
      needs ? `calls share the instance of this directory’s ${server.scope}` : '';
    hint.classList.toggle('warn', needs && !cwd.value.trim());
  };
  cwd.addEventListener('input', update);
  cwd.addEventListener('focus', () => list.replaceChildren(...roots().map((r) => el('option', {value: r}))));
  update();
  const box = el('details', {class: 'tryit'}, el('summary', {}, 'Try a tool'),
    el('label', {class: 'cwd'}, el('span', {}, 'cwd'), cwd, list), hint, forms);
  box.addEventListener('toggle', () => {
    if (box.open && !forms.childElementCount) buildForms(server.name, forms, () => cwd.value.trim());
  });
  return box;
}

async function buildForms(server, into, cwd) {
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
    if (op && op['x-mcp-tool']) forms.push(toolForm(server, op, doc, cwd));
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

function field(name, p, required) {
  const common = {name, 'data-type': p.type || 'json', required: required && p.type !== 'boolean'};
  if (Array.isArray(p.enum)) {
    const input = el('select', common, required ? null : el('option', {value: ''}, ''),
      p.enum.map((v) => el('option', {value: JSON.stringify(v)}, String(v))));
    input.dataset.type = 'enum';
    return input;
  }
  if (p.type === 'boolean') return el('input', Object.assign({type: 'checkbox'}, common, {checked: p.default === true}));
  if (p.type === 'integer' || p.type === 'number') {
    return el('input', Object.assign({type: 'number', step: p.type === 'integer' ? '1' : 'any',
      min: p.minimum, max: p.maximum, value: p.default}, common));
  }
  if (p.type === 'string') return el('input', Object.assign({type: 'text', value: p.default}, common));
  return el('textarea', Object.assign({placeholder: 'JSON'}, common, {'data-type': 'json'}),
    p.default !== undefined ? JSON.stringify(p.default) : '');
}

function toolForm(server, op, doc, cwd) {
  const tool = op['x-mcp-tool'];
  const schema = resolve(((op.requestBody || {}).content || {})['application/json']?.schema, doc);
  const required = new Set(schema.required || []);
  const fields = Object.entries(schema.properties || {}).map(([name, raw]) => {
    const p = resolve(raw, doc);
    return el('label', {}, el('span', {}, `${name}${required.has(name) ? ' *' : ''}`,
      p.description ? el('span', {class: 'tag'}, ` — ${p.description}`) : null), field(name, p, required.has(name)));
  });
  const ui = {
    progress: el('progress', {hidden: true}),
    status: el('p', {class: 'tag status', 'aria-live': 'polite'}),
    result: el('div', {class: 'result', hidden: true}),
  };
  const button = el('button', {type: 'submit', class: 'primary'}, `Call ${tool}`);
  const form = el('form', {class: 'tool', 'data-tool': tool},
    op.summary ? el('p', {class: 'desc'}, op.summary) : null, fields, button, ui.progress, ui.status, ui.result);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    let args;
    try {
      args = readArgs(form);
    } catch (err) {
      ui.status.textContent = err.message;
      return;
    }
    button.disabled = true;
    ui.result.hidden = true;
    ui.status.textContent = 'calling…';
    ui.progress.hidden = false;
    ui.progress.removeAttribute('value');
    try {
      await call(server, tool, args, cwd(), ui);
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
  const fail = (text) => {
    ui.result.className = 'result error';
    ui.result.replaceChildren(el('pre', {}, text));
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
        ui.result.className = `result ${data.isError ? 'error' : 'ok'}`;
        ui.result.replaceChildren(...renderResult(data));
        ui.result.hidden = false;
      } else if (ev.event === 'error') {
        ui.status.textContent = 'failed';
        fail([data.detail || data.title, data.stderrTail].filter(Boolean).join('\n\n'));
      }
    }
  } catch (err) {
    ui.status.textContent = 'failed';
    fail([err.message, err.problem && err.problem.stderrTail].filter(Boolean).join('\n\n'));
  } finally {
    ui.progress.hidden = true;
  }
}

// A data: URL only for the image types a browser shows without running
// anything (no SVG: it can hold script).
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

// renderResult is a CallToolResult's content as elements, then its
// structured content, then the raw JSON behind a click.
export function renderResult(res) {
  const out = [];
  for (const c of res.content || []) {
    out.push(renderContent(c));
  }
  if (res.structuredContent !== undefined) {
    out.push(el('div', {class: 'content structured'}, el('span', {class: 'tag'}, 'structured content'),
      el('pre', {}, JSON.stringify(res.structuredContent, null, 2))));
  }
  out.push(el('details', {class: 'raw'}, el('summary', {}, 'Raw JSON'), el('pre', {}, JSON.stringify(res, null, 2))));
  return out;
}

function renderContent(c) {
  switch (c.type) {
    case 'text':
      return el('pre', {class: 'content text'}, c.text);
    case 'image':
      if (IMAGE_TYPES.has(c.mimeType)) {
        return el('figure', {class: 'content image'}, el('img', {src: `data:${c.mimeType};base64,${c.data}`, alt: `image (${c.mimeType})`}),
          el('figcaption', {class: 'tag'}, `${c.mimeType}, ${Math.round((c.data || '').length * 3 / 4)} bytes`));
      }
      return el('p', {class: 'content tag'}, `image of type ${c.mimeType} (not shown)`);
    case 'audio':
      return el('p', {class: 'content tag'}, `audio (${c.mimeType}, ${Math.round((c.data || '').length * 3 / 4)} bytes)`);
    case 'resource': {
      const r = c.resource || {};
      return el('div', {class: 'content resource'}, el('p', {class: 'tag'}, 'embedded resource ', el('code', {}, r.uri || ''),
        r.mimeType ? ` (${r.mimeType})` : ''),
      r.text !== undefined ? el('pre', {}, r.text) : el('p', {class: 'tag'}, `${Math.round((r.blob || '').length * 3 / 4)} bytes of binary`));
    }
    case 'resource_link':
      return el('p', {class: 'content link'}, 'resource link ', el('code', {}, c.uri || ''), c.name ? ` — ${c.name}` : '',
        c.description ? el('span', {class: 'tag'}, ` ${c.description}`) : null);
  }
  return el('pre', {class: 'content other'}, JSON.stringify(c, null, 2));
}
