package nixresolve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"mcpx.dev/mcpx/internal/proctree"
)

// run runs one nix subcommand and returns its stdout. ctx bounds it: on
// expiry nix and every process below it are killed — its process group,
// and the builders nix runs in sessions of their own with whatever they
// started (proctree.KillTree) — none must outlive it. Each run has a TMPDIR
// of its own under CacheDir/tmp, where nix makes its nix-build-* build
// directories; it is removed when the run ends, killed or not. A failure is
// returned as is; the caller turns it into an *Error with nixMessage(stderr).
func (r *Resolver) run(ctx context.Context, args ...string) (stdout []byte, stderr string, err error) {
	if r.opts.Offline {
		args = append(args[:len(args):len(args)], "--offline")
	}
	tmp, err := r.tempDir()
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, r.opts.Binary, args...)
	cmd.Env = withTempDir(r.env, tmp)
	cmd.Dir = r.opts.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		proctree.KillTree(cmd.Process.Pid)
		// Setpgid: the leader's pid is the group's id.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	// A grandchild that escaped and still holds the pipes must not keep
	// us waiting.
	cmd.WaitDelay = 2 * time.Second
	var out bytes.Buffer
	errBuf := &tailBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = &out, errBuf
	if r.opts.Run != nil {
		err = r.opts.Run(cmd)
	} else {
		err = cmd.Run()
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return out.Bytes(), errBuf.String(), err
}

// tempDir makes a new TMPDIR for one nix run under CacheDir/tmp.
func (r *Resolver) tempDir() (string, error) {
	parent := filepath.Join(r.opts.CacheDir, "tmp")
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", fmt.Errorf("making nix's temporary directory: %w", err)
	}
	d, err := os.MkdirTemp(parent, "run-")
	if err != nil {
		return "", fmt.Errorf("making nix's temporary directory: %w", err)
	}
	return d, nil
}

// withTempDir is env with TMPDIR set to dir.
func withTempDir(env []string, dir string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TMPDIR=") {
			out = append(out, kv)
		}
	}
	return append(out, "TMPDIR="+dir)
}

// nixEnv is the environment of nix processes: env with extra lines appended
// to NIX_CONFIG (nix reads NIX_CONFIG as nix.conf lines, later ones win).
func nixEnv(env, extra []string) []string {
	if len(extra) == 0 {
		return env
	}
	out := make([]string, 0, len(env)+1)
	conf := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NIX_CONFIG="); ok {
			conf = v
			continue
		}
		out = append(out, kv)
	}
	lines := strings.Join(extra, "\n")
	if conf != "" {
		lines = conf + "\n" + lines
	}
	return append(out, "NIX_CONFIG="+lines)
}

// tailBuffer keeps the last max bytes written to it: a build's stderr can
// be long, and only its end says what failed.
type tailBuffer struct {
	max int
	buf []byte
	cut bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.cut = true
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	if t.cut {
		// The first line is probably partial; nixMessage looks for "error:".
		if i := bytes.IndexByte(t.buf, '\n'); i >= 0 {
			return string(t.buf[i+1:])
		}
	}
	return string(t.buf)
}

// isExecutable reports whether path is a regular file someone may execute.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// notFound reports whether err is the nix binary missing.
func notFound(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist)
}
