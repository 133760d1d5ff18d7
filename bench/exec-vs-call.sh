#!/usr/bin/env bash
# exec-vs-call: `mcpx exec` of one echo on bun against `mcpx call` of the
# same echo, interleaved against one warm daemon in a throwaway home, and
# the medians' ratio (issue 22's goal: at most 3×).
#
#   go build -o /tmp/mcpx ./cmd/mcpx
#   bench/exec-vs-call.sh /tmp/mcpx 20          # the default daemon (built-in demo)
#   CONFIG=1 bench/exec-vs-call.sh /tmp/mcpx 20 # a --config daemon: the run's relay
#
# bun is taken from testdata/npm (bash .ci/run deps) or PATH. Everything it
# starts is stopped, and its directory removed, when it exits.
set -euo pipefail
MCPX=$(realpath "$1"); N=${2:-20}
export PATH="$(cd "$(dirname "$0")/.." && pwd)/testdata/npm/node_modules/.bin:$PATH"
T=$(mktemp -d)
export HOME=$T/home XDG_RUNTIME_DIR=$T/run XDG_STATE_HOME=$T/state XDG_CONFIG_HOME=$T/config XDG_CACHE_HOME=$T/cache
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME" "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME"
chmod 700 "$XDG_RUNTIME_DIR"
cd "$T"
C=()
if [ -n "${CONFIG:-}" ]; then
	printf '{"servers": {"demo": {"command": "%s", "args": ["demo-server"]}}}' "$MCPX" >"$T/c.json"
	C=(--config "$T/c.json")
fi
"$MCPX" serve "${C[@]}" >"$T/serve.log" 2>&1 &
SP=$!
trap 'kill $SP 2>/dev/null; wait $SP 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 100); do "$MCPX" status "${C[@]}" --no-autostart >/dev/null 2>&1 && break; sleep 0.1; done
# Warm: the child started, the client generated, the snippet's bundle cached.
"$MCPX" call "${C[@]}" demo.echo '{"message":"x"}' >/dev/null
for _ in 1 2; do
	out=$("$MCPX" exec "${C[@]}" --runtime bun 'return demo.echo({message:"x"})')
	case $out in *'"text":"x"'*) ;; *) echo "exec answered: $out" >&2; exit 1 ;; esac
done
now() { date +%s%N; }
c=() e=()
for _ in $(seq "$N"); do
	s=$(now); "$MCPX" call "${C[@]}" demo.echo '{"message":"x"}' >/dev/null; c+=($((($(now) - s) / 1000)))
	s=$(now); "$MCPX" exec "${C[@]}" --runtime bun 'return demo.echo({message:"x"})' >/dev/null; e+=($((($(now) - s) / 1000)))
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mc=$(med "${c[@]}") me=$(med "${e[@]}")
echo "load $(cut -d' ' -f1 /proc/loadavg): mcpx call ${mc} µs, mcpx exec (bun) ${me} µs: $(awk "BEGIN {printf \"%.2f\", $me / $mc}")×"
