// Package paths is where a daemon of mcpx keeps its files, which daemon a
// command means, and whether a daemon's process is alive: the one place
// the daemon (`mcpx serve`), the Go client and the CLI look these up (the
// model is tailscale's paths package).
//
//	d, err := paths.Of(os.Getenv, "")                       // the default daemon, or that of $MCPX_CONFIG
//	rec, err := paths.ReadRecord[wire.DaemonRecord](d.State) // where it serves, its token
//	if err == nil && paths.Alive(rec.Pid) && paths.Answers(rec.Socket) {
//		// it serves
//	}
//
// Directories follow the XDG base directory specification: a variable
// that is unset or not absolute is ignored. getenv is os.Getenv, or a
// test's.
//
// # Several daemons
//
// One daemon per config file. The default daemon (no --config, no
// $MCPX_CONFIG, or `mcpx serve --config X` as before) keeps the default
// socket and state directory. A daemon chosen by a config (a client's
// --config or $MCPX_CONFIG, or `mcpx serve --own-socket`) lives at paths
// named by the config's fingerprint:
//
//	socket: $XDG_RUNTIME_DIR/mcpx/mcpx-<fp>.sock (else <state>/mcpx.sock)
//	state:  $XDG_STATE_HOME/mcpx/daemons/<fp>/
//
// The fingerprint is of the config file's canonical absolute path, not of
// its content: editing a config (which the daemon reloads) must not move
// its daemon, nor leave the old one running beside a new one.
package paths

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// StateDir is the default daemon's state directory: $XDG_STATE_HOME/mcpx,
// else ~/.local/state/mcpx. It holds the daemon record, the token and the
// log of a daemon started on demand.
func StateDir(getenv func(string) string) (string, error) {
	d := xdgDir(getenv, "XDG_STATE_HOME", filepath.Join(".local", "state"))
	if d == "" {
		return "", errNoHome
	}
	return filepath.Join(d, "mcpx"), nil
}

// DefaultSocket is the default daemon's socket: $XDG_RUNTIME_DIR/mcpx/mcpx.sock,
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

// Daemon is where one daemon lives.
type Daemon struct {
	Config string // the config file's canonical path; "" = the default daemon's own choice
	State  string // its state directory
	Socket string // its unix socket
}

// SocketIs reports whether sock is d's socket.
func (d Daemon) SocketIs(sock string) bool {
	return d.Socket != "" && filepath.Clean(d.Socket) == filepath.Clean(sock)
}

// DaemonsDir is the directory under the default state directory that holds
// the state directories of the daemons chosen by a config.
const DaemonsDir = "daemons"

// Default is the default daemon: StateDir and DefaultSocket.
func Default(getenv func(string) string) (Daemon, error) {
	state, err := StateDir(getenv)
	if err != nil {
		return Daemon{}, err
	}
	sock, err := DefaultSocket(getenv)
	if err != nil {
		return Daemon{}, err
	}
	return Daemon{State: state, Socket: sock}, nil
}

// Of is the daemon of config (a --config value; "" = $MCPX_CONFIG, else
// the default daemon). A config that the default daemon serves (its
// record says so, and its process is alive) chooses the default daemon.
func Of(getenv func(string) string, config string) (Daemon, error) {
	config = cmp.Or(config, getenv("MCPX_CONFIG"))
	def, err := Default(getenv)
	if err != nil || config == "" {
		return def, err
	}
	canon, err := canonical(config)
	if err != nil {
		return Daemon{}, err
	}
	if rec, err := ReadRecord[servedConfig](def.State); err == nil && rec.Config != "" && Alive(rec.Pid) {
		if c, err := canonical(rec.Config); err == nil && c == canon {
			def.Config = canon
			return def, nil
		}
	}
	return fingerprinted(getenv, def.State, canon), nil
}

// servedConfig is what Of reads of the default daemon's record.
type servedConfig struct {
	Pid    int    `json:"pid"`
	Config string `json:"config"`
}

// Own is the daemon of config at its fingerprint's paths, whatever the
// default daemon serves (`mcpx serve --own-socket`).
func Own(getenv func(string) string, config string) (Daemon, error) {
	state, err := StateDir(getenv)
	if err != nil {
		return Daemon{}, err
	}
	canon, err := canonical(config)
	if err != nil {
		return Daemon{}, err
	}
	return fingerprinted(getenv, state, canon), nil
}

// Serve is where `mcpx serve` serves: state and sock where given, else
// those of Own(own) when own (--own-socket's config) is not "", else the
// default daemon's.
func Serve(getenv func(string) string, own, state, sock string) (Daemon, error) {
	d := Daemon{State: state, Socket: sock}
	if own != "" {
		o, err := Own(getenv, own)
		if err != nil {
			return Daemon{}, err
		}
		d = Daemon{Config: o.Config, State: cmp.Or(state, o.State), Socket: cmp.Or(sock, o.Socket)}
	}
	var err error
	if d.State == "" {
		if d.State, err = StateDir(getenv); err != nil {
			return Daemon{}, err
		}
	}
	if d.Socket == "" {
		if d.Socket, err = DefaultSocket(getenv); err != nil {
			return Daemon{}, err
		}
	}
	return d, nil
}

// fingerprinted is the daemon of canon at its fingerprint's paths, under
// the default state directory state.
func fingerprinted(getenv func(string) string, state, canon string) Daemon {
	sum := sha256.Sum256([]byte(canon))
	fp := hex.EncodeToString(sum[:6])
	d := Daemon{Config: canon, State: filepath.Join(state, DaemonsDir, fp)}
	if rt := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(rt) {
		d.Socket = filepath.Join(rt, "mcpx", "mcpx-"+fp+".sock")
	} else {
		d.Socket = filepath.Join(d.State, "mcpx.sock")
	}
	return d
}

// canonical is path absolute, with symlinks resolved when it exists, so
// that two spellings of one file choose one daemon.
func canonical(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("config %s: %w", path, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// StateDirs are the state directories of every daemon that may have run:
// the default daemon's, then those of the daemons chosen by a config,
// sorted.
func StateDirs(getenv func(string) string) ([]string, error) {
	state, err := StateDir(getenv)
	if err != nil {
		return nil, err
	}
	sub, _ := filepath.Glob(filepath.Join(state, DaemonsDir, "*"))
	sort.Strings(sub)
	return append([]string{state}, sub...), nil
}

// RecordFile is the daemon record's name in its state directory; the
// contract names it too (wire.RecordFile), and a test holds the two equal.
const RecordFile = "daemon.json"

// ReadRecord reads the daemon record in state into an R (a
// wire.DaemonRecord, or the part of it the caller needs). It does not
// check that the daemon is alive: a daemon that died without cleaning up
// leaves its record behind.
func ReadRecord[R any](state string) (*R, error) {
	path := filepath.Join(state, RecordFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rec := new(R)
	if err := json.Unmarshal(b, rec); err != nil {
		return nil, fmt.Errorf("reading the daemon record %s: %w", path, err)
	}
	return rec, nil
}
