// Package doctor is `mcpx doctor` minus its command line: the checks of a
// machine's mcpx setup — the config, the state directory, the daemon's
// socket, the daemon's tailnet node, nix, what the kernel can enforce for
// a confined child, and that every server starts and lists its tools —
// each a Finding, a problem with its fix.
//
//	d := &doctor.Doctor{Getenv: os.Getenv, Version: v}
//	cfg, src := d.Config(path)
//	d.State(state)
//	bc := d.Socket(ctx, sock) // the daemon, when one answers
//	d.Sandbox(nil)
//	if cfg != nil {
//		d.Nix(cfg)
//		d.Servers(ctx, cfg, src, state, bc, 30*time.Second)
//	}
//	for _, f := range d.Findings { … }
//
// A check of the tailnet node with no daemon running needs a node of its
// own (package tsnet): the CLI brings it up and reports with TailnetUp.
package doctor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
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

	"mcpx.dev/mcpx/auth/rights"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/deploy"
	"mcpx.dev/mcpx/nixresolve/nixspec"
	"mcpx.dev/mcpx/pool/proc/sandbox"
	"mcpx.dev/mcpx/wire"
)

// Finding is one check the doctor made.
type Finding struct {
	Check   string `json:"check"`             // config, state, socket, tailnet, nix, sandbox, server
	Subject string `json:"subject,omitempty"` // a path or a server name
	OK      bool   `json:"ok"`
	Detail  string `json:"detail"`        // what was found
	Fix     string `json:"fix,omitempty"` // for a problem: how to fix it
}

// Doctor collects findings. The zero value checks with os.Getenv.
type Doctor struct {
	// Getenv reads the environment (the default config path); nil = os.Getenv.
	Getenv func(string) string
	// Version is the one a throwaway broker reports.
	Version string

	Findings []Finding
}

// OK records a check that passed.
func (d *Doctor) OK(check, subject, detail string) {
	d.Findings = append(d.Findings, Finding{Check: check, Subject: subject, OK: true, Detail: detail})
}

// Problem records a check that failed, with its fix.
func (d *Doctor) Problem(check, subject, detail, fix string) {
	d.Findings = append(d.Findings, Finding{Check: check, Subject: subject, Detail: detail, Fix: fix})
}

// Failed reports whether a check failed.
func (d *Doctor) Failed() bool {
	return slices.ContainsFunc(d.Findings, func(f Finding) bool { return !f.OK })
}

// Config loads the config at path ("" = the default, as the daemon loads
// it); nil when it does not load.
func (d *Doctor) Config(path string) (*config.Config, daemon.Source) {
	getenv := d.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg, src, err := daemon.LoadConfig(path, getenv)
	if err != nil {
		where := cmp.Or(src.Path, path)
		d.Problem("config", where, err.Error(), fmt.Sprintf("edit %s; `mcpx config check` lists every error", where))
		return nil, src
	}
	n := len(cfg.Servers)
	d.OK("config", src.String(), fmt.Sprintf("%d server%s", n, plural(n)))
	return cfg, src
}

// State checks that the state directory is the user's, not open to
// others, and writable, and that the daemon record and token are private.
func (d *Doctor) State(dir string) {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		d.OK("state", dir, "not created yet (the daemon creates it)")
		return
	}
	if err != nil {
		d.Problem("state", dir, err.Error(), "check the permissions of its parent directories")
		return
	}
	if !st.IsDir() {
		d.Problem("state", dir, "not a directory", "move the file away: "+deploy.ShellJoin([]string{"mv", dir, dir + ".old"}))
		return
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		d.Problem("state", dir, fmt.Sprintf("owned by uid %d, not by you (uid %d)", sys.Uid, os.Getuid()),
			deploy.ShellJoin([]string{"chown", "-R", strconv.Itoa(os.Getuid()), dir})+" (as its owner or root)")
		return
	}
	if st.Mode().Perm()&0o077 != 0 {
		d.Problem("state", dir, fmt.Sprintf("mode %04o: other users may read or change the daemon's token and record", st.Mode().Perm()),
			deploy.ShellJoin([]string{"chmod", "700", dir}))
		return
	}
	f, err := os.CreateTemp(dir, ".doctor*")
	if err != nil {
		d.Problem("state", dir, "not writable: "+err.Error(), deploy.ShellJoin([]string{"chmod", "u+rwx", dir}))
		return
	}
	f.Close()
	os.Remove(f.Name())
	for _, name := range []string{wire.RecordFile, wire.TokenFile} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o077 != 0 {
			d.Problem("state", p, fmt.Sprintf("mode %04o: other users may read the daemon's token", st.Mode().Perm()), deploy.ShellJoin([]string{"chmod", "600", p}))
			return
		}
	}
	d.OK("state", dir, "yours, private, writable")
}

// Socket checks the daemon's socket: nothing there (no daemon: clients
// start one), a daemon that answers (its client is returned), or a stale
// socket nobody listens on.
func (d *Doctor) Socket(ctx context.Context, sock string) *client.Client {
	st, err := os.Lstat(sock)
	if errors.Is(err, fs.ErrNotExist) {
		d.OK("socket", sock, "no daemon running (a client starts one on demand; `mcpx service install` runs one as a service)")
		return nil
	}
	if err != nil {
		d.Problem("socket", sock, err.Error(), "check the permissions of "+filepath.Dir(sock))
		return nil
	}
	if st.Mode().Type() != fs.ModeSocket {
		d.Problem("socket", sock, "a file that is not a socket is in the socket's place", "move it away: "+deploy.ShellJoin([]string{"mv", sock, sock + ".old"}))
		return nil
	}
	conn, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			d.Problem("socket", sock, "stale: the socket is there but no daemon answers (a daemon was killed and left it)",
				"remove it: "+deploy.ShellJoin([]string{"rm", sock})+"; the next client starts a daemon, or `mcpx service install` runs one")
		} else {
			d.Problem("socket", sock, "cannot connect: "+err.Error(), "check that the socket is yours: "+deploy.ShellJoin([]string{"ls", "-l", sock}))
		}
		return nil
	}
	conn.Close()
	bc := client.New(sock, client.Options{})
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	who, _, err := bc.Whoami(wctx, client.Caller{})
	if err != nil {
		d.Problem("socket", sock, "a process listens but does not answer as mcpx: "+err.Error(), "stop it (`mcpx daemon stop`, or kill the process holding the socket) and start the daemon again")
		return nil
	}
	detail := "a daemon answers"
	if who.Daemon != nil {
		detail = fmt.Sprintf("daemon pid %d, version %s, answers", who.Daemon.Pid, who.Daemon.Version)
	}
	d.OK("socket", sock, detail)
	return bc
}

// TailnetUp reports a node of the doctor's own brought up as `mcpx serve
// --tailnet` would (when no daemon runs): up as name, or the error of Up,
// whose message names the way out (the login URL).
func (d *Doctor) TailnetUp(hostname, name string, err error) {
	if err != nil {
		d.Problem("tailnet", hostname, err.Error(), "log the node in: open the URL above, or give it an auth key (--tailnet-authkey-file or $TS_AUTHKEY), then run doctor again")
		return
	}
	d.OK("tailnet", hostname, "up as "+name)
}

// DaemonTailnet asks the running daemon how its node is (GET /v1/tailnet):
// it owns the node's state, so doctor does not start one. Off is a problem
// only when want (--tailnet) says the daemon should be on one.
func (d *Doctor) DaemonTailnet(ctx context.Context, bc *client.Client, want bool, hostname string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, _, err := bc.Tailnet(ctx)
	if err != nil {
		if want {
			d.Problem("tailnet", hostname, "the daemon does not say how its node is: "+err.Error(),
				"upgrade the daemon (`mcpx daemon stop`; the next client starts the new one), then run doctor again")
		}
		return
	}
	ok, subject, detail, fix := TailnetFinding(*st, want, hostname)
	switch {
	case ok && detail == "":
	case ok:
		d.OK("tailnet", subject, detail)
	default:
		d.Problem("tailnet", subject, detail, fix)
	}
}

// TailnetFinding is doctor's word on a running daemon's node: ok or not,
// what it is, and the fix. want says whether --tailnet asked for one; an
// off node nobody asked for is no finding (detail "").
func TailnetFinding(st wire.TailnetStatus, want bool, hostname string) (ok bool, subject, detail, fix string) {
	subject = hostname
	if st.Node != nil {
		subject = cmp.Or(st.Node.DNSName, st.Node.Name)
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

// Nix checks that nix is on PATH when a server's command is nix:.
func (d *Doctor) Nix(cfg *config.Config) {
	var users []string
	for name, s := range cfg.Servers {
		if nixspec.Is(s.Command) {
			users = append(users, name)
		}
	}
	if len(users) == 0 {
		return
	}
	slices.Sort(users)
	bin := cmp.Or(cfg.Nix.Binary, "nix")
	path, err := exec.LookPath(bin)
	if err != nil {
		d.Problem("nix", strings.Join(users, ", "), fmt.Sprintf("the nix: command of these servers needs nix, and %s: %v", bin, err),
			"install Nix (apt-get install nix-bin, or the installer at nixos.org) and put it on PATH, or name it in the config's nix.binary; a service's PATH is set by `mcpx service install --path`")
		return
	}
	d.OK("nix", strings.Join(users, ", "), "nix is "+path)
}

// coreSandbox are the features of a confinement without which a confined
// child is not confined in earnest (docs/sandbox.md): one this kernel does
// not enforce is a problem, since every caller who is not the owner gets a
// confined child, which Enforce mode does not start without them.
var coreSandbox = []string{sandbox.FeatureFilesystem, sandbox.FeatureNetwork, sandbox.FeatureIPC, sandbox.FeatureUnixSockets,
	sandbox.FeatureUserNamespace, sandbox.FeatureCapabilities, sandbox.FeatureNoNewPrivs, sandbox.FeatureMemory, sandbox.FeatureProcesses}

// Sandbox reports what this kernel can enforce for a confined child,
// feature by feature (sandbox.Probe): k, or the probe's when k is nil.
func (d *Doctor) Sandbox(k *sandbox.Kernel) {
	if k == nil {
		p := sandbox.Probe()
		k = &p
	}
	for _, f := range k.Report() {
		detail := strings.TrimPrefix(f.String(), f.Name+": ")
		if f.Enforced || !slices.Contains(coreSandbox, f.Name) && f.Name != "containment" {
			d.OK("sandbox", f.Name, detail)
			continue
		}
		d.Problem("sandbox", f.Name, detail,
			`a caller who is not the owner, and a server with "sandbox", gets no child on this kernel until it can (or "sandbox": "best-effort" for the owner's); docs/sandbox.md says what each feature needs`)
	}
}

// Servers starts every server of cfg and lists its tools, each bounded by
// timeout: through the daemon when bc (Socket's) is not nil and serves the
// config of src, else in a throwaway broker of this process, closed before
// Servers returns, whose nix cache is the state directory's. (A daemon
// serving another config would answer for its servers, not cfg's.)
func (d *Doctor) Servers(ctx context.Context, cfg *config.Config, src daemon.Source, state string, bc *client.Client, timeout time.Duration) {
	if bc != nil {
		if other, ok := servesOther(ctx, bc, src); ok {
			d.OK("server", "", fmt.Sprintf("the daemon serves %s, not %s: its servers are checked in a broker of mcpx doctor's own (`mcpx reload`, or serve it with --config, to have the daemon serve them)", other, src))
			bc = nil
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range cfg.Servers {
			if !yield(n) {
				return
			}
		}
	})
	cwd, _ := os.Getwd()
	session := "doctor-" + strconv.Itoa(os.Getpid())
	list := func(ctx context.Context, name string) (int, error) {
		st, _, err := bc.ServerTools(ctx, client.Caller{Cwd: cwd, Session: session}, name)
		if err != nil {
			return 0, err
		}
		return countTools(st.Tools)
	}
	if bc == nil {
		b, closeBroker, err := d.broker(cfg, src, state)
		if err != nil {
			d.Problem("server", "", err.Error(), "")
			return
		}
		defer closeBroker()
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
			d.Problem("server", name, "does not start or list its tools: "+oneLine(err.Error()),
				fmt.Sprintf("check its command, args and env in the config; `mcpx call %s.<tool>` shows the child's stderr", name))
			continue
		}
		d.OK("server", name, fmt.Sprintf("started, %d tool%s", n, plural(n)))
	}
}

// servesOther reports the config the daemon of bc serves ("the built-in
// demo server" for none) when it is not src's. A daemon that does not say
// (not the owner's) is taken to serve it.
func servesOther(ctx context.Context, bc *client.Client, src daemon.Source) (string, bool) {
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	who, _, err := bc.Whoami(wctx, client.Caller{})
	if err != nil || who.Daemon == nil {
		return "", false
	}
	want := src.Path
	if want != "" {
		if abs, err := filepath.Abs(want); err == nil {
			want = abs
		}
	}
	if got := who.Daemon.Config; filepath.Clean(got) != filepath.Clean(want) && !(got == "" && want == "") {
		if got == "" {
			return "the built-in demo server", true
		}
		return got, true
	}
	return "", false
}

// broker is a throwaway broker of cfg with a state directory of its own
// (its nix cache is state's, if set), and the function that stops its
// children and removes what it made.
func (d *Doctor) broker(cfg *config.Config, src daemon.Source, state string) (*broker.Broker, func(), error) {
	tmp, err := os.MkdirTemp("", "mcpx-doctor")
	if err != nil {
		return nil, nil, err
	}
	log := slog.New(slog.DiscardHandler)
	nix, err := daemon.NixResolver(cfg, src, cmp.Or(state, tmp), log)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	b, err := broker.New(broker.Options{Config: cfg, Logger: log, Version: d.Version, StateDir: tmp, Nix: nix})
	if err != nil {
		nix.Close()
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	return b, func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.Close(cctx) //nolint:errcheck // the children are stopped or killed either way
		nix.Close()
		os.RemoveAll(tmp)
	}, nil
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

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
