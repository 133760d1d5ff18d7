package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"mcpx.dev/mcpx/client"
)

// standaloneFlag registers --standalone on fs, for a command whose broker
// client bo names.
func standaloneFlag(fs *flag.FlagSet, bo *brokerOpts) {
	fs.BoolVar(&bo.standalone, "standalone", false, "run the pool in this process for this command alone (no daemon started or reached; its servers stop when the command ends): for CI, where a lingering daemon is a nuisance")
}

// standaloneWait bounds how long an in-process daemon may take to answer
// on its socket.
const standaloneWait = 30 * time.Second

// startStandalone runs `mcpx serve` in this process, for this command
// alone: on a socket and state directory of a new temporary directory, no
// TCP, with the config of --config ($MCPX_CONFIG, else the default) and
// the command's --override-paths and --fallback-paths (else their
// variables). It
// returns the socket; the daemon is stopped (its children with it) and the
// directory removed by c's closers, when the command returns.
func startStandalone(ctx context.Context, c *cli, config string, chain *chainFlagValues) (string, error) {
	dir, err := os.MkdirTemp("", "mcpx-standalone-")
	if err != nil {
		return "", fmt.Errorf("--standalone: %w", err)
	}
	sock := filepath.Join(dir, "mcpx.sock")
	args := []string{"--socket", sock, "--state-dir", filepath.Join(dir, "state"), "--listen", "off"}
	if config != "" {
		args = append(args, "--config", config)
	}
	if chain != nil {
		args = append(args, "--override-paths", *chain.override, "--fallback-paths", *chain.fallback)
	}
	ctx, cancel := context.WithCancel(ctx)
	log := new(logTail) // the daemon's own log: shown only if it fails to start
	sc := &cli{stdin: strings.NewReader(""), stdout: log, stderr: log, getenv: func(k string) string {
		if k == "MCPX_CONFIG" {
			return "" // --config says it, or nothing does: not the fingerprint's paths
		}
		return c.getenv(k)
	}}
	done := make(chan int, 1)
	go func() { done <- serve(ctx, sc, args) }()
	stop := func() {
		cancel()
		<-done // serve has stopped every child
		os.RemoveAll(dir)
	}
	deadline := time.Now().Add(standaloneWait)
	for !client.Answers(sock) {
		select {
		case code := <-done:
			os.RemoveAll(dir)
			cancel()
			return "", fmt.Errorf("--standalone: the in-process daemon did not start (exit %d):\n%s", code, strings.TrimSpace(log.String()))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("--standalone: the in-process daemon did not answer on %s within %s", sock, standaloneWait)
		}
	}
	c.closers = append(c.closers, stop)
	return sock, nil
}

// usesDefaultRecord reports whether a script finds the daemon bc reaches
// by the default daemon record (a local script's client reads it for the
// loopback URL): not for the daemon of a --config, nor an in-process one,
// whose scripts go through the run's relay instead.
func usesDefaultRecord(c *cli, bc *client.Client) bool {
	if !bc.Unix() {
		return true // remote: the relay is used anyway
	}
	def, err := defaultSocket(c.getenv)
	return err == nil && filepath.Clean(def) == filepath.Clean(bc.Addr())
}

// logTail keeps the last logTailMax bytes written to it, from any goroutine:
// an in-process daemon's log, for the error if it fails to start.
type logTail struct {
	mu sync.Mutex
	b  []byte
}

const logTailMax = 16 << 10

func (t *logTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - logTailMax; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *logTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
