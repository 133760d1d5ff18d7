"""An MCP stdio server with an endless line: the attack run's child.

    flood.py MODE PIDFILE PROGRESS

MODE "call": it serves the tools pid (its pid) and flood, and answers a
call of flood with 100 MB of `a` and no newline. MODE "init": it answers
initialize so instead. It writes the bytes slowly, a chunk at a time,
noting in PROGRESS the bytes written so far after each chunk, "done" when
all are written, or "cut N" when its stdout was closed on it; then it
sleeps until killed. Its pid goes to PIDFILE. It refuses every method it
does not know, server/discover included, with -32601.
"""
import json
import os
import sys
import time

mode, pidfile, progress = sys.argv[1], sys.argv[2], sys.argv[3]
TOTAL = 100 * 1000 * 1000
CHUNK = 1 << 20
out = sys.stdout.buffer


def note(text):
    with open(progress + ".tmp", "w") as f:
        f.write(text)
    os.replace(progress + ".tmp", progress)


def send(msg):
    out.write(json.dumps(msg).encode() + b"\n")
    out.flush()


def flood():
    chunk = b"a" * CHUNK
    written = 0
    try:
        while written < TOTAL:
            n = min(CHUNK, TOTAL - written)
            out.write(chunk[:n])
            out.flush()
            written += n
            note(str(written))
            time.sleep(0.005)
        note("done")
    except BrokenPipeError:
        note("cut %d" % written)
    while True:
        time.sleep(3600)


with open(pidfile, "w") as f:
    f.write(str(os.getpid()))
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg or "method" not in msg:
        continue
    method, params = msg["method"], msg.get("params") or {}
    if method == "initialize" and mode == "init":
        flood()
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "flood", "version": "0"}}})
    elif method == "tools/list":
        tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("pid", "flood")]
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": tools}})
    elif method == "tools/call" and params.get("name") == "flood":
        flood()
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "content": [{"type": "text", "text": str(os.getpid())}]}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": msg["id"],
              "error": {"code": -32601, "message": "Method not found"}})
