package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"mcpx.dev/mcpx/api/client"
	"mcpx.dev/mcpx/api/wire"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/broker/config"
	"mcpx.dev/mcpx/nixresolve"
	"mcpx.dev/mcpx/rights"
)

// finding is one check `mcpx doctor` made.
type finding struct {
	Check   string `json:"check"`             // config, state, socket, tailnet, nix, server
	Subject string `json:"subject,omitempty"` // a path or a server name
	OK      bool   `json:"ok"`
	Detail  string `json:"detail"`        // what was found
	Fix     string `json:"fix,omitempty"` // for a problem: how to fix it
}

// doctor collects findings.
type doctor struct {
	findings []finding
}

func (d *doctor) ok(check, subject, detail string) {
	d.findings = append(d.findings, finding{Check: check, Subject: subject, OK: true, Detail: detail})
}

func (d *doctor) problem(check, subject, detail, fix string) {
	d.findings = append(d.findings, finding{Check: check, Subject: subject, Detail: detail, Fix: fix})
}

func (d *doctor) failed() bool {
	return slices.ContainsFunc(d.findings, func(f finding) bool { return !f.OK })
}

// doctorCmd is `mcpx doctor [--json]`: it checks the config, the state
// directory, the socket, the tailnet node (with --tailnet), nix (when a
// server's command is nix:) and that every server starts and lists its
// tools (through the daemon when one answers, else in a throwaway broker of
// its own), and prints each problem with its fix. Exit 1 when something is
// wrong.
func doctorCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "doctor")
	asJSON := fs.Bool("json", false, "print the findings as JSON")
	configPath := fs.String("config", "", "config file (default $XDG_CONFIG_HOME/mcpx/config.json)")
	stateFlag := fs.String("state-dir", "", "state directory (default $XDG_STATE_HOME/mcpx)")
	socketFlag := fs.String("socket", "", "the daemon's socket (default $XDG_RUNTIME_DIR/mcpx/mcpx.sock, else in the state directory)")
	timeout := fs.Duration("server-timeout", 30*time.Second, "how long each server may take to start and list its tools")
	tailnet := addTailnetFlags(fs)
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(c, fs, "unexpected argument %q", pos[0])
	}
	if *timeout <= 0 {
		return usageError(c, fs, "--server-timeout must be positive, e.g. 30s")
	}
	if !flagSet(fs, "tailnet-up-timeout") {
		*tailnet.upTimeout = 15 * time.Second // a check, not a daemon: fail soon
	}
	d := &doctor{}
	cfg, src := d.checkConfig(*configPath, c.getenv)
	state, sock, err := daemonPaths(c.getenv, *stateFlag, *socketFlag)
	if err != nil {
		d.problem("state", "", err.Error(), "set $HOME (or $XDG_STATE_HOME and $XDG_RUNTIME_DIR)")
	} else {
		d.checkState(state)
	}
	daemon := d.checkSocket(ctx, c, sock)
	switch {
	case daemon != nil:
		d.checkDaemonTailnet(ctx, daemon, tailnet)
	case *tailnet.on:
		d.checkTailnet(ctx, c, tailnet, state)
	}
	if cfg != nil {
		d.checkNix(cfg)
		d.checkServers(ctx, c, cfg, src, state, daemon, *timeout)
	}
	if *asJSON {
		b, _ := json.MarshalIndent(struct {
			OK       bool      `json:"ok"`
			Findings []finding `json:"findings"`
		}{!d.failed(), d.findings}, "", "  ")
		fmt.Fprintf(c.stdout, "%s\n", b)
	} else {
		d.print(c)
	}
	if d.failed() {
		return exitToolError
	}
	return exitOK
}

// flagSet reports whether the command line set the flag called name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func (d *doctor) print(c *cli) {
	problems := 0
	for _, f := range d.findings {
		mark := "ok  "
		if !f.OK {
			mark = "FAIL"
			problems++
		}
		subject := ""
		if f.Subject != "" {
			subject = " " + f.Subject
		}
		fmt.Fprintf(c.stdout, "%s %s%s: %s\n", mark, f.Check, subject, f.Detail)
		if f.Fix != "" {
			fmt.Fprintf(c.stdout, "     fix: %s\n", f.Fix)
		}
	}
	if problems == 0 {
		fmt.Fprintln(c.stdout, "no problems found")
	} else {
		fmt.Fprintf(c.stdout, "%d problem%s found\n", problems, plural(problems))
	}
}

func (d *doctor) checkConfig(path string, getenv func(string) string) (*config.Config, configSource) {
	cfg, src, err := loadConfig(path, getenv)
	if err != nil {
		where := cmpOr(src.path, path)
		d.problem("config", where, err.Error(), fmt.Sprintf("edit %s; `mcpx config check` lists every error", where))
		return nil, src
	}
	n := len(cfg.Servers)
	d.ok("config", src.String(), fmt.Sprintf("%d server%s", n, plural(n)))
	return cfg, src
}

// checkState: the state directory is the user's, not open to others, and
// writable; the daemon record and token are private.
func (d *doctor) checkState(dir string) {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		d.ok("state", dir, "not created yet (the daemon creates it)")
		return
	}
	if err != nil {
		d.problem("state", dir, err.Error(), "check the permissions of its parent directories")
		return
	}
	if !st.IsDir() {
		d.problem("state", dir, "not a directory", "move the file away: "+shellJoin([]string{"mv", dir, dir + ".old"}))
		return
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		d.problem("state", dir, fmt.Sprintf("owned by uid %d, not by you (uid %d)", sys.Uid, os.Getuid()),
			shellJoin([]string{"chown", "-R", strconv.Itoa(os.Getuid()), dir})+" (as its owner or root)")
		return
	}
	if st.Mode().Perm()&0o077 != 0 {
		d.problem("state", dir, fmt.Sprintf("mode %04o: other users may read or change the daemon's token and record", st.Mode().Perm()),
			shellJoin([]string{"chmod", "700", dir}))
		return
	}
	f, err := os.CreateTemp(dir, ".doctor*")
	if err != nil {
		d.problem("state", dir, "not writable: "+err.Error(), shellJoin([]string{"chmod", "u+rwx", dir}))
		return
	}
	f.Close()
	os.Remove(f.Name())
	for _, name := range []string{"daemon.json", "token"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o077 != 0 {
			d.problem("state", p, fmt.Sprintf("mode %04o: other users may read the daemon's token", st.Mode().Perm()), shellJoin([]string{"chmod", "600", p}))
			return
		}
	}
	d.ok("state", dir, "yours, private, writable")
}

// checkSocket: nothing there (no daemon: clients start one), a daemon that
// answers (returned), or a stale socket nobody listens on.
func (d *doctor) checkSocket(ctx context.Context, c *cli, sock string) *client.Client {
	st, err := os.Lstat(sock)
	if errors.Is(err, fs.ErrNotExist) {
		d.ok("socket", sock, "no daemon running (a client starts one on demand; `mcpx service install` runs one as a service)")
		return nil
	}
	if err != nil {
		d.problem("socket", sock, err.Error(), "check the permissions of "+filepath.Dir(sock))
		return nil
	}
	if st.Mode().Type() != fs.ModeSocket {
		d.problem("socket", sock, "a file that is not a socket is in the socket's place", "move it away: "+shellJoin([]string{"mv", sock, sock + ".old"}))
		return nil
	}
	conn, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			d.problem("socket", sock, "stale: the socket is there but no daemon answers (a daemon was killed and left it)",
				"remove it: "+shellJoin([]string{"rm", sock})+"; the next client starts a daemon, or `mcpx service install` runs one")
		} else {
			d.problem("socket", sock, "cannot connect: "+err.Error(), "check that the socket is yours: "+shellJoin([]string{"ls", "-l", sock}))
		}
		return nil
	}
	conn.Close()
	bc := client.New(sock, client.Options{})
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	who, _, err := bc.Whoami(wctx, client.Caller{})
	if err != nil {
		d.problem("socket", sock, "a process listens but does not answer as mcpx: "+err.Error(), "stop it (`mcpx daemon stop`, or kill the process holding the socket) and start the daemon again")
		return nil
	}
	detail := "a daemon answers"
	if who.Daemon != nil {
		detail = fmt.Sprintf("daemon pid %d, version %s, answers", who.Daemon.Pid, who.Daemon.Version)
	}
	d.ok("socket", sock, detail)
	return bc
}

// checkTailnet brings the node up as `mcpx serve --tailnet` would, bounded
// by --tailnet-up-timeout, when no daemon runs: a node that needs a login,
// or cannot reach its control server, is reported with the way out Up
// names.
func (d *doctor) checkTailnet(ctx context.Context, c *cli, f tailnetFlags, state string) {
	node, err := f.node(c.getenv, state, slog.New(slog.DiscardHandler))
	if err != nil {
		d.problem("tailnet", *f.hostname, err.Error(), "fix the --tailnet flags")
		return
	}
	defer node.Close()
	info, err := node.Up(ctx)
	if err != nil {
		d.problem("tailnet", *f.hostname, err.Error(), "log the node in: open the URL above, or give it an auth key (--tailnet-authkey-file or $TS_AUTHKEY), then run doctor again")
		return
	}
	d.ok("tailnet", *f.hostname, "up as "+cmpOr(info.DNSName, info.Name))
}

// checkDaemonTailnet asks the running daemon how its node is (GET
// /v1/tailnet): it owns the node's state, so doctor does not start one.
// Off is a problem only when --tailnet says the daemon should be on one.
func (d *doctor) checkDaemonTailnet(ctx context.Context, bc *client.Client, f tailnetFlags) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, _, err := bc.Tailnet(ctx)
	if err != nil {
		if *f.on {
			d.problem("tailnet", *f.hostname, "the daemon does not say how its node is: "+err.Error(),
				"upgrade the daemon (`mcpx daemon stop`; the next client starts the new one), then run doctor again")
		}
		return
	}
	ok, subject, detail, fix := tailnetFinding(*st, *f.on, *f.hostname)
	switch {
	case ok && detail == "":
	case ok:
		d.ok("tailnet", subject, detail)
	default:
		d.problem("tailnet", subject, detail, fix)
	}
}

// tailnetFinding is doctor's word on a running daemon's node: ok or not,
// what it is, and the fix. want says whether --tailnet asked for one; an
// off node nobody asked for is no finding (detail "").
func tailnetFinding(st wire.TailnetStatus, want bool, hostname string) (ok bool, subject, detail, fix string) {
	subject = hostname
	if st.Node != nil {
		subject = cmpOr(st.Node.DNSName, st.Node.Name)
	}
	health := ""
	if len(st.Health) > 0 {
		health = " (" + strings.Join(st.Health, "; ") + ")"
	}
	restart := "`mcpx daemon stop`, then start it with `mcpx serve --tailnet` (or `mcpx service install --tailnet …`)"
	switch st.State {
	case wire.TailnetOff:
		if !want {
			return true, subject, "", ""
		}
		return false, subject, "the running daemon is not on a tailnet", restart
	case wire.TailnetRunning:
		return true, subject, "the daemon's node is up as " + subject + health, ""
	case wire.TailnetNeedsLogin:
		if st.AuthURL != "" {
			return false, subject, "the daemon's node needs login" + health,
				"open " + st.AuthURL + " to log it in, or restart the daemon with an auth key (--tailnet-authkey-file or $TS_AUTHKEY)"
		}
		return false, subject, "the daemon's node needs login" + health,
			"restart the daemon with an auth key (--tailnet-authkey-file or $TS_AUTHKEY); its log shows a login URL when the control server gives one"
	case wire.TailnetNeedsMachineAuth:
		return false, subject, "the daemon's node waits for an administrator to approve it" + health,
			"approve the machine in the tailnet's admin console"
	case wire.TailnetStarting:
		return false, subject, "the daemon's node is still connecting to its control server" + health,
			"check that the control server is reachable; run doctor again in a minute"
	}
	return false, subject, "the daemon's node is stopped" + health, "the daemon's log says why; " + restart
}

// checkNix: a nix: server needs nix on PATH.
func (d *doctor) checkNix(cfg *config.Config) {
	var users []string
	for name, s := range cfg.Servers {
		if nixresolve.IsSpec(s.Command) {
			users = append(users, name)
		}
	}
	if len(users) == 0 {
		return
	}
	slices.Sort(users)
	bin := cmpOr(cfg.Nix.Binary, "nix")
	path, err := exec.LookPath(bin)
	if err != nil {
		d.problem("nix", strings.Join(users, ", "), fmt.Sprintf("the nix: command of these servers needs nix, and %s: %v", bin, err),
			"install Nix (apt-get install nix-bin, or the installer at nixos.org) and put it on PATH, or name it in the config's nix.binary; a service's PATH is set by `mcpx service install --path`")
		return
	}
	d.ok("nix", strings.Join(users, ", "), "nix is "+path)
}

// checkServers starts every server (through the daemon when it answers,
// else in a broker of this process, closed before returning) and lists its
// tools, each bounded by timeout.
func (d *doctor) checkServers(ctx context.Context, c *cli, cfg *config.Config, src configSource, state string, daemon *client.Client, timeout time.Duration) {
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range cfg.Servers {
			if !yield(n) {
				return
			}
		}
	})
	cwd, _ := os.Getwd()
	session := "doctor-" + strconv.Itoa(os.Getpid())
	var list func(ctx context.Context, name string) (int, error)
	if daemon != nil {
		list = func(ctx context.Context, name string) (int, error) {
			st, _, err := daemon.ServerTools(ctx, client.Caller{Cwd: cwd, Session: session}, name)
			if err != nil {
				return 0, err
			}
			return countTools(st.Tools)
		}
	} else {
		tmp, err := os.MkdirTemp("", "mcpx-doctor")
		if err != nil {
			d.problem("server", "", err.Error(), "")
			return
		}
		defer os.RemoveAll(tmp)
		log := slog.New(slog.DiscardHandler)
		nix, err := newNixResolver(cfg, src, cmpOr(state, tmp), log)
		if err != nil {
			d.problem("server", "", err.Error(), "")
			return
		}
		defer nix.Close()
		b, err := broker.New(broker.Options{Config: cfg, Logger: log, Version: version(), StateDir: tmp, Nix: nix})
		if err != nil {
			d.problem("server", "", err.Error(), "")
			return
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			b.Close(cctx) //nolint:errcheck // the children are stopped or killed either way
		}()
		caller := broker.Caller{Name: "local:" + strconv.Itoa(os.Getuid()), Via: "unix", Uid: os.Getuid(), Local: true, Owner: true, Rights: rights.All()}
		list = func(ctx context.Context, name string) (int, error) {
			raw, err := b.Tools(ctx, broker.Request{Caller: caller, Server: name,
				Context: broker.CallContext{Cwd: cwd, Session: session, Pid: os.Getpid()}})
			if err != nil {
				return 0, err
			}
			return countTools(raw)
		}
	}
	for _, name := range names {
		sctx, cancel := context.WithTimeout(ctx, timeout)
		n, err := list(sctx, name)
		cancel()
		if err != nil {
			d.problem("server", name, "does not start or list its tools: "+oneLine(err.Error()),
				fmt.Sprintf("check its command, args and env in the config; `mcpx call %s.<tool>` shows the child's stderr", name))
			continue
		}
		d.ok("server", name, fmt.Sprintf("started, %d tool%s", n, plural(n)))
	}
}

func countTools(raw json.RawMessage) (int, error) {
	var tools []json.RawMessage
	if err := json.Unmarshal(raw, &tools); err != nil {
		return 0, fmt.Errorf("its tool list is not a JSON array: %w", err)
	}
	return len(tools), nil
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}
