// A script using a generated client's resources (client.ts), run by the
// api tests with node and deno against server-everything: it has the
// child gzip 256 bytes into a session resource, reads that blob resource,
// follows a resource's updates with subscribeResource until one comes,
// then stops (which unsubscribes), and prints one JSON line of results.
import { callTool, readResource, subscribeResource } from "./client.ts";

const bytes = Array.from({ length: 256 }, (_, i) => i);
const data = "data:application/octet-stream;base64," + btoa(String.fromCharCode(...bytes));
await callTool("everything", "gzip-file-as-resource", { name: "bytes.gz", data });
console.error("gzipped");
const read = await readResource("everything", "demo://resource/session/bytes.gz");

const uri = "demo://resource/static/document/architecture.md";
const updates = subscribeResource("everything", uri);
const first = updates.next(); // subscribes
console.error("subscribing");
await callTool("everything", "toggle-subscriber-updates", {});
console.error("toggled");
const got = await first;
console.error("updated");
await updates.return(undefined); // unsubscribes

console.log(JSON.stringify({ blob: read.contents[0]?.blob, mimeType: read.contents[0]?.mimeType, updated: got.value?.uri }));
