package client

import (
	"net"
	"net/netip"
	"net/url"
	"strings"

	"mcpx.dev/mcpx/internal/paths"
	"mcpx.dev/mcpx/wire"
)

// The local daemon's paths and record, for programs that link the client:
// they forward to package internal/paths (the daemon's file layout, which
// the daemon, the CLI and this client share; being internal, it cannot be
// imported from outside this module).

// StateDir is the default daemon's state directory (paths.StateDir):
// $XDG_STATE_HOME/mcpx, else ~/.local/state/mcpx. getenv is os.Getenv, or
// a test's.
func StateDir(getenv func(string) string) (string, error) { return paths.StateDir(getenv) }

// DefaultSocket is the default daemon's socket (paths.DefaultSocket):
// $XDG_RUNTIME_DIR/mcpx/mcpx.sock, else mcpx.sock in StateDir.
func DefaultSocket(getenv func(string) string) (string, error) { return paths.DefaultSocket(getenv) }

// DefaultConfig is the daemon's default config file (paths.DefaultConfig):
// $XDG_CONFIG_HOME/mcpx/config.json, else ~/.config/mcpx/config.json.
func DefaultConfig(getenv func(string) string) (string, error) { return paths.DefaultConfig(getenv) }

// ReadRecord reads the daemon record (wire.RecordFile) in stateDir
// (paths.ReadRecord). It does not check that the daemon is alive: a
// daemon that died without cleaning up leaves its record behind.
func ReadRecord(stateDir string) (*wire.DaemonRecord, error) {
	return paths.ReadRecord[wire.DaemonRecord](stateDir)
}

// Answers reports whether something accepts connections on the unix socket
// sock, within a second (paths.Answers).
func Answers(sock string) bool { return paths.Answers(sock) }

// recordToken returns the token of the daemon record in stateDir if the
// record's address is the one of base (an http URL), else "". A token is
// never sent to another address: whoever listens there could replay it.
func recordToken(stateDir, base string) string {
	rec, err := paths.ReadRecord[wire.DaemonRecord](stateDir)
	if err != nil || rec.Token == "" || rec.Address == "" {
		return ""
	}
	u, err := url.Parse(base)
	if err != nil || !sameLoopback(u.Host, rec.Address) {
		return ""
	}
	return rec.Token
}

// sameLoopback reports whether a and b (host:port) are the same port on a
// loopback host: "localhost:80", "127.0.0.1:80" and "[::1]:80" are one.
func sameLoopback(a, b string) bool {
	if a == b {
		return true
	}
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	return err1 == nil && err2 == nil && pa == pb && isLoopback(ha) && isLoopback(hb)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
