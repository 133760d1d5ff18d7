package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"mcpx.dev/mcpx/wire"
)

// Where a local daemon keeps things, per the XDG base directory
// specification (a variable that is unset or not absolute is ignored). The
// daemon (`mcpx serve`) and every client use these defaults.

// StateDir is the daemon's state directory: $XDG_STATE_HOME/mcpx, else
// ~/.local/state/mcpx. It holds the daemon record, the token and the log of
// a daemon started on demand. getenv is os.Getenv, or a test's.
func StateDir(getenv func(string) string) (string, error) {
	d := xdgDir(getenv, "XDG_STATE_HOME", filepath.Join(".local", "state"))
	if d == "" {
		return "", errNoHome
	}
	return filepath.Join(d, "mcpx"), nil
}

// DefaultSocket is the daemon's socket path: $XDG_RUNTIME_DIR/mcpx/mcpx.sock,
// else mcpx.sock in StateDir (~/.local/state/mcpx/mcpx.sock).
func DefaultSocket(getenv func(string) string) (string, error) {
	if d := xdgDir(getenv, "XDG_RUNTIME_DIR", ""); d != "" {
		return filepath.Join(d, "mcpx", "mcpx.sock"), nil
	}
	d, err := StateDir(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "mcpx.sock"), nil
}

// DefaultConfig is the daemon's default config file:
// $XDG_CONFIG_HOME/mcpx/config.json, else ~/.config/mcpx/config.json.
func DefaultConfig(getenv func(string) string) (string, error) {
	d := xdgDir(getenv, "XDG_CONFIG_HOME", ".config")
	if d == "" {
		return "", errNoHome
	}
	return filepath.Join(d, "mcpx", "config.json"), nil
}

var errNoHome = errors.New("cannot find the home directory: set $HOME or the XDG_* variables")

// xdgDir returns $name if it is absolute, else $HOME/homeRel (if homeRel is
// not empty), else "".
func xdgDir(getenv func(string) string, name, homeRel string) string {
	if d := getenv(name); filepath.IsAbs(d) {
		return d
	}
	if homeRel == "" {
		return ""
	}
	home := getenv("HOME")
	if !filepath.IsAbs(home) {
		h, err := os.UserHomeDir()
		if err != nil || !filepath.IsAbs(h) {
			return ""
		}
		home = h
	}
	return filepath.Join(home, homeRel)
}

// ReadRecord reads the daemon record (wire.RecordFile) in stateDir. It does
// not check that the daemon is alive: a daemon that died without cleaning
// up leaves its record behind.
func ReadRecord(stateDir string) (*wire.DaemonRecord, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, wire.RecordFile))
	if err != nil {
		return nil, err
	}
	var rec wire.DaemonRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("reading the daemon record %s: %w", filepath.Join(stateDir, wire.RecordFile), err)
	}
	return &rec, nil
}

// recordToken returns the token of the daemon record in stateDir if the
// record's address is the one of base (an http URL), else "". A token is
// never sent to another address: whoever listens there could replay it.
func recordToken(stateDir, base string) string {
	rec, err := ReadRecord(stateDir)
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
