// fs plus the globSync the conformance CLI imports by name. It only calls
// globSync('**/<file name>', {cwd}) (its tier-check reads checks.json files),
// so that is all this one does: every file of that name under cwd.
import fs from 'node:fs';
import path from 'node:path';

export * from 'node:fs';
export default fs;

export function globSync(pattern, opts = {}) {
  const cwd = opts.cwd ?? process.cwd();
  const name = String(pattern).replace(/^\*\*\//, '');
  const out = [];
  const walk = (rel, depth) => {
    if (depth > 32) return;
    let entries;
    try {
      entries = fs.readdirSync(path.join(cwd, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const r = rel ? path.join(rel, e.name) : e.name;
      if (e.isDirectory()) walk(r, depth + 1);
      else if (e.name === name) out.push(r);
    }
  };
  walk('', 0);
  return out;
}
