package npmtest

import (
	"encoding/json"
)

// ProbeServer is an MCP server in one JavaScript file with no
// dependencies, for the tests of a confined node child whose package is
// all it may read (an npm package, a nix store path): it speaks
// newline-delimited JSON-RPC on stdio (the initialize handshake; any
// other request is -32601) and has three tools, each answering the
// system's error (its message, with the code: "EACCES: permission
// denied, open '/x'") as an isError result:
//
//	read {path}          the file's contents
//	write {path, text}   writes the file; "ok"
//	list {path}          the directory's names, one a line
//	self                 the server's own file (__filename)
const ProbeServer = `#!/usr/bin/env node
"use strict";
const fs = require("fs");
const readline = require("readline");
const str = {type: "string"};
const tools = [
  {name: "read", description: "Reads a file.", inputSchema: {type: "object", properties: {path: str}, required: ["path"]}},
  {name: "write", description: "Writes a file.", inputSchema: {type: "object", properties: {path: str, text: str}, required: ["path", "text"]}},
  {name: "list", description: "Lists a directory.", inputSchema: {type: "object", properties: {path: str}, required: ["path"]}},
  {name: "self", description: "The server's own file.", inputSchema: {type: "object", properties: {}}},
];
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
const run = {
  read: (a) => fs.readFileSync(a.path, "utf8"),
  write: (a) => { fs.writeFileSync(a.path, a.text); return "ok"; },
  list: (a) => fs.readdirSync(a.path).join("\n"),
  self: () => __filename,
};
readline.createInterface({input: process.stdin}).on("line", (line) => {
  let msg;
  try { msg = JSON.parse(line); } catch { return; }
  if (msg.id === undefined || msg.id === null) return;
  const ok = (result) => send({jsonrpc: "2.0", id: msg.id, result});
  const p = msg.params || {};
  switch (msg.method) {
  case "initialize":
    return ok({protocolVersion: p.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: "probe", version: "1.0.0"}});
  case "ping":
    return ok({});
  case "tools/list":
    return ok({tools});
  case "tools/call":
    try {
      const f = run[p.name];
      if (!f) throw new Error("no tool " + p.name);
      return ok({content: [{type: "text", text: String(f(p.arguments || {}))}]});
    } catch (e) {
      return ok({content: [{type: "text", text: String(e.message)}], isError: true});
    }
  default:
    send({jsonrpc: "2.0", id: msg.id, error: {code: -32601, message: "method not found: " + msg.method}});
  }
});
`

// ProbePackage is an npm package of ProbeServer: its bin "probe" is
// server.js.
func ProbePackage(name, version string) Package {
	pj, _ := json.Marshal(map[string]any{"name": name, "version": version, "bin": map[string]string{"probe": "server.js"}})
	return Package{Name: name, Version: version, Files: map[string]string{"package.json": string(pj), "server.js": ProbeServer}}
}
