// Deliberately wrong uses of the generated types: tsc must report an error
// on every line marked "error here", and on no other.
import type { demo } from "./demo.ts";
import type { filesystem } from "./filesystem.ts";

const a: demo.AddInput = { a: 1, b: "2" }; // error here
const r: filesystem.ReadTextFileInput = { path: 7 }; // error here
const ok: demo.SleepInput = { ms: 10 };

export { a, r, ok };
