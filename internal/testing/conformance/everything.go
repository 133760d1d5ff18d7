package conformance

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// EverythingPackage is go-sdk's conformance server: the suite's tools,
// resources and prompts, over stdio (no flags) or Streamable HTTP (-http
// ADDR, -stateless=BOOL). It is built from the module cache at the go-sdk
// version go.mod requires, so it needs no go.mod entry of its own.
const EverythingPackage = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

// EverythingBinary builds the conformance server into a temporary directory
// and returns its path. Run with no arguments it serves MCP on stdin/stdout:
// the child for mcpx to front (`{"command": bin}`).
func EverythingBinary(t testing.TB) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("conformance: building %s needs the go command: %v", EverythingPackage, err)
	}
	bin := filepath.Join(t.TempDir(), "everything-server")
	cmd := exec.Command(goBin, "build", "-o", bin, EverythingPackage)
	cmd.Dir = testenv.RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("conformance: go build %s: %v\n%s", EverythingPackage, err, out)
	}
	return bin
}

// StartEverything builds and starts the conformance server on a free
// loopback port, Streamable HTTP, stateless or not, and returns its MCP URL
// (http://127.0.0.1:PORT/mcp; it answers on every path). The server is
// killed and reaped when t ends.
func StartEverything(t testing.TB, stateless bool) string {
	t.Helper()
	bin := EverythingBinary(t)
	// The server takes an address, not a listener: pick a free port and
	// retry if another process takes it before the server binds it.
	for attempt := 1; ; attempt++ {
		addr := freePort(t)
		if serveEverything(t, bin, addr, stateless) {
			return "http://" + addr + "/mcp"
		}
		if attempt == 3 {
			t.Fatalf("conformance: the everything server did not start on 3 free ports")
		}
	}
}

// serveEverything starts bin on addr and waits until it accepts
// connections; false if it exited first (the port was taken).
func serveEverything(t testing.TB, bin, addr string, stateless bool) bool {
	t.Helper()
	cmd := exec.Command(bin, "-http="+addr, fmt.Sprintf("-stateless=%t", stateless))
	cmd.Env = append(os.Environ(), proctest.Env(t))
	var log testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("conformance: starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	var stop sync.Once
	t.Cleanup(func() {
		stop.Do(func() {
			cmd.Process.Kill()
			<-exited
		})
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			if strings.Contains(log.String(), "address already in use") {
				return false
			}
			t.Fatalf("conformance: the everything server exited: %s", log.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return true
		}
		if time.Now().After(deadline) {
			t.Fatalf("conformance: the everything server is not listening on %s after 30s: %s", addr, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
