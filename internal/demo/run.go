package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Environment variables read by MaybeServe, and by Main when its failure
// flags are on.
const (
	// EnvServer=1 makes MaybeServe serve the demo server and exit.
	EnvServer = "MCPX_DEMO_SERVER"
	// EnvGarbage=1 writes a non-JSON line to stdout before serving.
	EnvGarbage = "MCPX_DEMO_GARBAGE"
	// EnvHang=1 reads stdin and never answers anything, initialize included.
	EnvHang = "MCPX_DEMO_HANG"
	// EnvExitAtStart=N writes "boom" to stderr and exits with code N at once.
	EnvExitAtStart = "MCPX_DEMO_EXIT_AT_START"
	// EnvDrift=1 serves a later version of the demo server's tools: no
	// add, and an echo that also requires an integer "times" (DriftEcho).
	// Tests of stale generated clients use it.
	EnvDrift = "MCPX_DEMO_DRIFT"
	// EnvEra=stateless serves only the 2026-07-28 revision (initialize is
	// refused with -32601, as a server of that revision alone would);
	// EnvEra=handshake serves only the initialize handshake (server/discover
	// is refused with -32601, as a server predating it does). Unset: both,
	// as the SDK does.
	EnvEra = "MCPX_DEMO_ERA"
	// EnvRequestLog=<file> appends the method of every request and
	// notification the server receives to the file, one per line: tests count probes with it.
	EnvRequestLog = "MCPX_DEMO_REQUEST_LOG"
	// EnvRequestLogPid=1 starts each line of EnvRequestLog with the
	// server's pid and a space: tests of a start that runs two children
	// tell what each saw.
	EnvRequestLogPid = "MCPX_DEMO_REQUEST_LOG_PID"
	// EnvDiscoverDelay=<duration> answers server/discover only after the
	// delay (time.ParseDuration), as a dual-era server slow to start on a
	// loaded machine would; initialize is answered at once. Tests of the
	// era probe use it.
	EnvDiscoverDelay = "MCPX_DEMO_DISCOVER_DELAY"
	// EnvDescribe=<text> makes <text> echo's description and adds the
	// redescribe tool, which replaces it while the server runs (the
	// server then sends notifications/tools/list_changed). Tests of tool
	// pins use it.
	EnvDescribe = "MCPX_DEMO_DESCRIBE"
)

// GarbageLine is what EnvGarbage=1 writes to stdout (without the newline).
const GarbageLine = "this is not JSON-RPC"

// Run serves the demo server over newline-delimited JSON: requests are read
// from in, responses written to out, logs and tool output meant for stderr go
// to os.Stderr. It returns nil when in reaches EOF, and ctx.Err() when ctx is
// done first. Run does not close in or out.
func Run(ctx context.Context, in io.Reader, out io.Writer) error {
	return run(ctx, in, out, os.Stderr, flags{})
}

// flags are the failure and test flags Main honours.
type flags struct {
	drift      bool
	apps       bool   // EnvApps
	probe      bool   // EnvProbe
	era        string // EnvEra
	requestLog string // EnvRequestLog
	logPid     bool   // EnvRequestLogPid
	describe   string // EnvDescribe
	// discoverDelay is EnvDiscoverDelay's.
	discoverDelay time.Duration
}

func run(ctx context.Context, in io.Reader, out io.Writer, stderr io.Writer, f flags) error {
	rec := &initRecorder{r: in}
	srv := newServer(stderr, rec, f.drift, f.apps)
	if f.apps {
		addApps(srv)
	}
	if f.probe {
		addProbe(srv)
	}
	if f.describe != "" {
		addRedescribe(srv, f.describe)
	}
	if err := f.apply(srv); err != nil {
		return err
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(rec), Writer: nopWriteCloser{out}}
	err := srv.Run(ctx, t)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
		return nil
	}
	return err
}

// Main runs the demo server on stdin and stdout and returns the process exit
// code: 0 after a clean EOF on stdin. Only when failures is true does it
// honour the failure flags (EnvExitAtStart, EnvGarbage, EnvHang, EnvDrift): tests turn
// them on (MaybeServe, `mcpx demo-server --failure-flags`); the daemon's
// default demo server never does, so a stray variable in a user's
// environment cannot break it.
func Main(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, failures bool) int {
	if failures {
		if code, done := failAtStart(ctx, stdin, stdout, stderr); done {
			return code
		}
	}
	var f flags
	if failures {
		f = flags{drift: os.Getenv(EnvDrift) == "1", apps: os.Getenv(EnvApps) == "1", probe: os.Getenv(EnvProbe) == "1", era: os.Getenv(EnvEra), requestLog: os.Getenv(EnvRequestLog),
			logPid: os.Getenv(EnvRequestLogPid) == "1", describe: os.Getenv(EnvDescribe)}
		if v := os.Getenv(EnvDiscoverDelay); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				fmt.Fprintf(stderr, "demo server: %s=%q: %v\n", EnvDiscoverDelay, v, err)
				return 2
			}
			f.discoverDelay = d
		}
	}
	if err := run(ctx, stdin, stdout, stderr, f); err != nil {
		fmt.Fprintf(stderr, "demo server: %v\n", err)
		return 1
	}
	return 0
}

// failAtStart acts on the failure flags. done is true when the process
// should exit with code instead of serving.
func failAtStart(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) (code int, done bool) {
	if v, ok := os.LookupEnv(EnvExitAtStart); ok {
		code, err := strconv.Atoi(v)
		if err != nil {
			code = 1
		}
		fmt.Fprintln(stderr, "boom")
		return code, true
	}
	if os.Getenv(EnvGarbage) == "1" {
		fmt.Fprintln(stdout, GarbageLine)
	}
	if os.Getenv(EnvHang) == "1" {
		hang(ctx, stdin, stderr)
		return 1, true
	}
	return 0, false
}

// HangStdinEnded is what EnvHang=1 writes to stderr when its stdin ends.
// A child killed outright may have written it too: the client that gives
// up on it closes its stdin as it goes, before the kill.
const HangStdinEnded = "demo: stdin ended; hanging on until killed"

// HangTerminated is what EnvHang=1 writes to stderr when it gets SIGTERM,
// before it exits: the second step of a stop through the graces (its
// stdin's end, a grace, SIGTERM). A child killed outright never writes it,
// which is how tests tell the two apart.
const HangTerminated = "demo: SIGTERM; exiting"

// hang consumes in without answering and, even after EOF, keeps the process
// alive until ctx is done or it gets SIGTERM, so that callers must signal
// it to stop it.
func hang(ctx context.Context, in io.Reader, stderr io.Writer) {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() {
		<-term
		fmt.Fprintln(stderr, HangTerminated)
		os.Exit(143) // as the signal's default action would have it
	}()
	io.Copy(io.Discard, in)
	fmt.Fprintln(stderr, HangStdinEnded)
	<-ctx.Done()
}

// MaybeServe serves the demo server on stdin/stdout, failure flags on, and
// exits the process if EnvServer is "1"; otherwise it returns at once. See the package doc for
// the TestMain pattern.
func MaybeServe() {
	if os.Getenv(EnvServer) != "1" {
		return
	}
	os.Exit(Main(context.Background(), os.Stdin, os.Stdout, os.Stderr, true))
}

// apply installs the era and request-log flags on srv.
func (f flags) apply(srv *mcp.Server) error {
	refuse := ""
	switch f.era {
	case "":
	case "stateless":
		refuse = "initialize"
	case "handshake":
		refuse = "server/discover"
	default:
		return fmt.Errorf("%s=%q: want stateless or handshake", EnvEra, f.era)
	}
	var log *os.File
	if f.requestLog != "" {
		var err error
		if log, err = os.OpenFile(f.requestLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err != nil {
			return err
		}
	}
	if refuse == "" && log == nil && f.discoverDelay == 0 {
		return nil
	}
	prefix := ""
	if f.logPid {
		prefix = strconv.Itoa(os.Getpid()) + " "
	}
	var mu sync.Mutex
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if log != nil {
				mu.Lock()
				fmt.Fprintln(log, prefix+method)
				mu.Unlock()
			}
			if method == refuse {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q not found", method)}
			}
			if method == "server/discover" && f.discoverDelay > 0 {
				select {
				case <-time.After(f.discoverDelay):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return next(ctx, method, req)
		}
	})
	return nil
}

// nopWriteCloser keeps the transport from closing the caller's writer.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
