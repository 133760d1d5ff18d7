// Loaded with `node --import`: on a Node.js whose fs has no globSync (Node 20;
// Node 22 has it), redirect the conformance CLI's imports of fs to fs.mjs.
import { register } from 'node:module';

if (!(await import('node:fs')).globSync) {
  register(new URL('./hooks.mjs', import.meta.url));
}
