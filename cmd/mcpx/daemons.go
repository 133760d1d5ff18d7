package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"text/tabwriter"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/wire"
)

// Several daemons: one per config file. The default daemon (no --config, no
// $MCPX_CONFIG, or `mcpx serve --config X` as before) keeps the default
// socket and state directory. A daemon chosen by a config — a client's
// --config or $MCPX_CONFIG, or `mcpx serve --own-socket` — lives at paths
// named by the config's fingerprint:
//
//	socket: $XDG_RUNTIME_DIR/mcpx/mcpx-<fp>.sock (else <state>/mcpx.sock)
//	state:  $XDG_STATE_HOME/mcpx/daemons/<fp>/
//
// The fingerprint is of the config file's canonical absolute path, not of
// its content: editing a config (which the daemon reloads) must not move
// its daemon, nor leave the old one running beside a new one.

// daemonsDir is the directory under the default state directory that holds
// the state directories of the daemons chosen by a config.
const daemonsDir = "daemons"

// configFingerprint names the daemon of a config file by its canonical path.
func configFingerprint(canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return hex.EncodeToString(sum[:6])
}

// canonicalConfig is path absolute, with symlinks resolved when it exists,
// so that two spellings of one file choose one daemon.
func canonicalConfig(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("config %s: %w", path, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// chosenDaemon is where the daemon of a config lives.
type chosenDaemon struct {
	config string // canonical config path; "" = the default daemon's own choice
	state  string
	socket string
}

// daemonOf is the daemon of config (a --config value; "" = $MCPX_CONFIG,
// else the default daemon). A config that is the one the default daemon
// serves (its record says so) chooses the default daemon.
func daemonOf(getenv func(string) string, config string) (chosenDaemon, error) {
	config = cmp.Or(config, getenv("MCPX_CONFIG"))
	state, err := stateDir(getenv)
	if err != nil {
		return chosenDaemon{}, err
	}
	sock, err := defaultSocket(getenv)
	if err != nil {
		return chosenDaemon{}, err
	}
	if config == "" {
		return chosenDaemon{state: state, socket: sock}, nil
	}
	canon, err := canonicalConfig(config)
	if err != nil {
		return chosenDaemon{}, err
	}
	if rec, err := client.ReadRecord(state); err == nil && rec.Config != "" && pidAlive(rec.Pid) {
		if c, err := canonicalConfig(rec.Config); err == nil && c == canon {
			return chosenDaemon{config: canon, state: state, socket: sock}, nil
		}
	}
	return fingerprintDaemon(getenv, state, canon), nil
}

// fingerprintDaemon is the daemon of canon at its fingerprint's paths.
func fingerprintDaemon(getenv func(string) string, state, canon string) chosenDaemon {
	fp := configFingerprint(canon)
	d := chosenDaemon{config: canon, state: filepath.Join(state, daemonsDir, fp)}
	if rt := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(rt) {
		d.socket = filepath.Join(rt, "mcpx", "mcpx-"+fp+".sock")
	} else {
		d.socket = filepath.Join(d.state, "mcpx.sock")
	}
	return d
}

// pidAlive reports whether a process pid exists (signal 0; EPERM: it exists
// but is another user's).
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// daemonRow is one line of `mcpx daemons`.
type daemonRow struct {
	Pid       int       `json:"pid"`
	Config    string    `json:"config"` // "" = the built-in demo server
	Socket    string    `json:"socket"`
	StateDir  string    `json:"stateDir"`
	Started   time.Time `json:"started"`
	Uptime    string    `json:"uptime,omitempty"` // absent when stale
	Instances *int      `json:"instances,omitempty"`
	Stale     bool      `json:"stale"` // the record's pid is gone: the daemon died without removing it
}

// daemonsCmd is `mcpx daemons`: every daemon's record, the default's and
// those under <state>/daemons/.
func daemonsCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "daemons")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(c, fs, "unexpected argument %q", pos[0])
	}
	state, err := stateDir(c.getenv)
	if err != nil {
		return report(c, err)
	}
	dirs := []string{state}
	sub, _ := filepath.Glob(filepath.Join(state, daemonsDir, "*"))
	sort.Strings(sub)
	dirs = append(dirs, sub...)
	rows := []daemonRow{}
	for _, d := range dirs {
		rec, err := client.ReadRecord(d)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(c.stderr, "mcpx daemons: %v\n", err)
			}
			continue
		}
		rows = append(rows, daemonRowOf(ctx, rec, d))
	}
	if *asJSON {
		return printJSON(c, rows)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tUPTIME\tINSTANCES\tCONFIG\tSOCKET")
	for _, r := range rows {
		up, n := r.Uptime, "-"
		if r.Stale {
			up = "stale"
		}
		if r.Instances != nil {
			n = fmt.Sprint(*r.Instances)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", r.Pid, up, n, cmp.Or(r.Config, "(built-in demo)"), r.Socket)
	}
	tw.Flush()
	return exitOK
}

// daemonRowOf describes the daemon of rec (in state dir d); a live one is
// asked for its instances (briefly: a wedged daemon is listed without them).
func daemonRowOf(ctx context.Context, rec *wire.DaemonRecord, d string) daemonRow {
	r := daemonRow{Pid: rec.Pid, Config: rec.Config, Socket: rec.Socket, StateDir: cmp.Or(rec.State, d), Started: rec.Started}
	if !pidAlive(rec.Pid) {
		r.Stale = true
		return r
	}
	r.Uptime = time.Since(rec.Started).Round(time.Second).String()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if list, _, err := client.New(rec.Socket, client.Options{StateDir: r.StateDir}).Instances(ctx); err == nil {
		n := len(list.Instances)
		r.Instances = &n
	}
	return r
}
