package scripts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// launcher writes the launcher of a bundled script to opts.Dir, with its
// spec, and returns its path. The launcher is the script's harness: it
// installs the call hook, makes every console member but log write log
// records, defines script (a global, for the prefix lines), imports the
// bundle dynamically (running its top-level code: the prefix lines, then
// the script's), calls the function export the spec names and prints its
// return value as JSON, then calls the entry's suffix function in a
// finally, with script and result. It is bundled too (it imports the
// client's log), with the script's bundle left an import.
func launcher(opts BundleOptions) (string, error) {
	name := opts.Name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(opts.Entry), filepath.Ext(opts.Entry))
	}
	spec := struct {
		Path   string          `json:"path"`
		Name   string          `json:"name"`
		Export string          `json:"export,omitempty"`
		Args   json.RawMessage `json:"args,omitempty"`
	}{opts.Entry, name, opts.Export, opts.Args}
	b, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(opts.Dir, "spec.json"), b, 0o600); err != nil {
		return "", err
	}
	out := filepath.Join(opts.Dir, "runner.mjs")
	bo := esmBuild(opts, out)
	bo.Stdin = &api.StdinOptions{Contents: launcherSource, ResolveDir: opts.SourceDir, Sourcefile: "launcher.ts", Loader: api.LoaderTS}
	bo.External = []string{"./script.mjs"}
	if res := api.Build(bo); len(res.Errors) > 0 {
		return "", fmt.Errorf("bundling the launcher: %s", res.Errors[0].Text)
	}
	return out, nil
}

// launcherSource is the launcher's TypeScript. Plain node:
// imports, which Deno and Bun provide too. An error it prints has its
// stack's bundle frames mapped back to the script's files through the
// bundle's inline source map, for a runtime that does not apply it (bun;
// node and deno have mapped them already).
const launcherSource = `// mcpx run's launcher (generated; see package mcpx.dev/mcpx/scripts).
import { appendFileSync as $appendFileSync, readFileSync as $readFileSync } from "node:fs";
import $process from "node:process";
import { format as $format } from "node:util";
import { Console as $Console } from "node:console";
import { log as $log } from "mcpx";

// Every console member the runtime has becomes a log record at its level
// (the client's log), rendered as the runtime renders console's own
// output (a Console of its own, writing to $sink): warn, error and a
// failed assert at theirs, debug at debug, the rest at info; trace's
// record carries its frames; clear ends the groups; a member that Console
// has not (profile, timeStamp, ...) writes a debug record of its name.
// log still writes stdout (bun's write too); each member keeps its name.
const $console = globalThis.console as unknown as { [name: string]: unknown };
const $rawError = ($console.error as (...data: unknown[]) => void).bind(globalThis.console);
let $inRecord = 0; // > 0 while a member writes its record
// The client writes its records' lines here (its console.error is a member).
globalThis[Symbol.for("mcpx.write")] = (line: string): void => $rawError(line);
let $sinkText = "";
const $sink = {
  write(s: string): boolean { $sinkText += s; return true; },
  on() { return $sink; }, once() { return $sink; }, off() { return $sink; }, removeListener() { return $sink; },
  emit(): boolean { return false; }, listenerCount(): number { return 0; },
};
const $cap = new $Console({ stdout: $sink as never, stderr: $sink as never, colorMode: false }) as unknown as
  { [name: string]: ((...data: unknown[]) => void) | undefined };
const $levelOf: { [name: string]: "debug" | "info" | "warn" | "error" } = { debug: "debug", warn: "warn", error: "error", assert: "error" };
const $notRecords = ["log", "write", "Console", "context", "createTask"];
let $groups = 0;
function $record(level: "debug" | "info" | "warn" | "error", msg: string, attrs?: { [key: string]: unknown }): void {
  $inRecord++;
  try {
    $log[level](msg, attrs);
  } finally {
    $inRecord--;
  }
}
for (const $name of Object.keys($console)) {
  if ($notRecords.includes($name) || typeof $console[$name] !== "function") continue;
  const level = $levelOf[$name] ?? "info";
  $console[$name] = {
    [$name](...data: unknown[]): void {
      if ($inRecord > 0) { // a client without the mcpx.write hook: its record's line
        $rawError(...data);
        return;
      }
      if ($name === "trace") {
        const frames = $stackOf(new Error("trace")).split("\n").filter((l) => /^\s*at /.test(l)).slice(1).map((l) => l.trim());
        $record(level, "Trace" + (data.length > 0 ? ": " + $format(...data) : ""), { frames });
        return;
      }
      if ($name === "clear") {
        for (; $groups > 0; $groups--) $cap.groupEnd?.();
        return;
      }
      if ($name === "group" || $name === "groupCollapsed") $groups++;
      if ($name === "groupEnd") $groups = Math.max(0, $groups - 1);
      const own = $cap[$name];
      if (typeof own !== "function") {
        $record("debug", "console." + $name + (data.length > 0 ? " " + $format(...data) : ""));
        return;
      }
      $sinkText = "";
      // Console warns of a label it does not know (timeEnd, countReset)
      // through process.emitWarning, which some runtimes write to stderr
      // raw: while a member runs, a warning is a warn record instead.
      const emitWarning = $process.emitWarning;
      const warnings: string[] = [];
      $process.emitWarning = ((w: unknown): void => { warnings.push(w instanceof Error ? w.message : String(w)); }) as never;
      try {
        own.apply($cap, data);
      } finally {
        $process.emitWarning = emitWarning;
      }
      const text = $sinkText.replace(/\n$/, "");
      $sinkText = "";
      if (text !== "") $record(level, text);
      for (const w of warnings) $record("warn", "Warning: " + w);
    },
  }[$name];
}

const $report = $process.env.` + EnvReport + `;
globalThis[Symbol.for("mcpx.call")] = (call) => {
  if ($report) $appendFileSync($report, JSON.stringify(call) + "\n");
};
const $spec = JSON.parse($readFileSync(new URL("./spec.json", import.meta.url), "utf8"));
const $bundle = new URL("./script.mjs", import.meta.url);

// $stackOf is e's stack with frames in the bundle mapped to the sources.
function $stackOf(e) {
  const stack = e instanceof Error && e.stack ? e.stack : String(e);
  try {
    const m = /\/\/# sourceMappingURL=data:application\/json;base64,(\S+)\s*$/.exec($readFileSync($bundle, "utf8"));
    if (!m) return stack;
    const map = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(m[1]), (c) => c.charCodeAt(0))));
    const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const lines = []; // per bundle line: [column, source, line, column] segments
    let src = 0, line = 0, col = 0;
    for (const l of map.mappings.split(";")) {
      const segs = [];
      let gen = 0;
      for (const seg of l.split(",")) {
        const v = [];
        let shift = 0, value = 0;
        for (const ch of seg) {
          const d = B64.indexOf(ch);
          value += (d & 31) << shift;
          if (d & 32) shift += 5;
          else {
            v.push(value & 1 ? -(value >>> 1) : value >>> 1);
            value = shift = 0;
          }
        }
        if (v.length === 0) continue;
        gen += v[0];
        if (v.length >= 4) {
          src += v[1], line += v[2], col += v[3];
          segs.push([gen, src, line, col]);
        }
      }
      lines.push(segs);
    }
    const path = decodeURIComponent($bundle.pathname).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    return stack.replace(new RegExp("(?:file://)?" + path + ":(\\d+):(\\d+)", "g"), (whole, l, c) => {
      let best;
      for (const s of lines[Number(l) - 1] ?? []) if (s[0] <= Number(c) - 1) best = s;
      if (!best) return whole;
      const url = new URL((map.sourceRoot ?? "") + map.sources[best[1]], $bundle);
      const file = url.protocol === "file:" ? decodeURIComponent(url.pathname) : url.href; // mcpx:script.prefix
      return file + ":" + (best[2] + 1) + ":" + (best[3] + 1);
    });
  } catch {
    return stack;
  }
}

// The client's log maps the stacks it takes for a record's source here.
// A record a console member writes is the member's caller's: the frames
// of $record and the member (after $log's two) are dropped.
globalThis[Symbol.for("mcpx.stack")] = (stack: string): string => {
  if ($inRecord > 0) {
    let n = 0;
    stack = stack.split("\n").filter((l) => !/^\s*at /.test(l) || n++ < 2 || n > 4).join("\n");
  }
  return stack.includes(decodeURIComponent($bundle.pathname)) ? $stackOf(stack) : stack;
};

class $NoExport extends Error {}

/** What runs: the script's file, its name, its arguments, the export called. */
const script = {
  path: $spec.path as string,
  name: $spec.name as string,
  args: ("args" in $spec ? $spec.args : $process.argv.slice(2)) as unknown,
  export: ($spec.export ?? "default") as string,
};
/** How it went, for the suffix lines. */
const result: { ok: boolean; value: unknown; error: unknown; ms: number } = { ok: false, value: undefined, error: undefined, ms: 0 };
// The prefix lines, at the top of the script's module, see script as a
// global (a name the module declares itself hides it).
Object.defineProperty(globalThis, "script", { value: script, writable: true, configurable: true });

const $t0 = performance.now();
let $exit = false; // the run of a function (or a failure) ends the runtime
try {
  const $mod = await import("./script.mjs");
  const $fn = $mod[script.export];
  if ($spec.export !== undefined && typeof $fn !== "function") {
    throw new $NoExport("mcpx run: the script exports no function " + JSON.stringify(script.export) +
      "; its exports: " + (Object.keys($mod).join(", ") || "none"));
  }
  if (typeof $fn === "function") {
    $exit = true;
    result.value = await $fn(script.args);
    if (result.value !== undefined) $process.stdout.write((JSON.stringify(result.value) ?? "") + "\n");
  }
  result.ok = true;
} catch (e) {
  $exit = true;
  result.error = e;
  $rawError(e instanceof $NoExport ? e.message : $stackOf(e));
  $process.exitCode = 1;
} finally {
  result.ms = performance.now() - $t0;
  // The suffix lines: a function of the script's module (entry.go), there
  // when the module's first line ran.
  const $suffix = globalThis[Symbol.for("mcpx.suffix")];
  if (typeof $suffix === "function") await $suffix(script, result);
}
// The function's promise settling ends the run: an idle keep-alive
// connection (Node's fetch keeps one for a while) must not hold it.
if ($exit) $process.stdout.write("", () => $process.exit());
`
