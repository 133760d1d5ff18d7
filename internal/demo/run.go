package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

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
)

// GarbageLine is what EnvGarbage=1 writes to stdout (without the newline).
const GarbageLine = "this is not JSON-RPC"

// Run serves the demo server over newline-delimited JSON: requests are read
// from in, responses written to out, logs and tool output meant for stderr go
// to os.Stderr. It returns nil when in reaches EOF, and ctx.Err() when ctx is
// done first. Run does not close in or out.
func Run(ctx context.Context, in io.Reader, out io.Writer) error {
	return run(ctx, in, out, os.Stderr, false)
}

func run(ctx context.Context, in io.Reader, out io.Writer, stderr io.Writer, drift bool) error {
	rec := &initRecorder{r: in}
	srv := newServer(stderr, rec, drift)
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
	if err := run(ctx, stdin, stdout, stderr, failures && os.Getenv(EnvDrift) == "1"); err != nil {
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
		hang(ctx, stdin)
		return 1, true
	}
	return 0, false
}

// hang consumes in without answering and, even after EOF, keeps the process
// alive until ctx is done, so that callers must signal it to stop it.
func hang(ctx context.Context, in io.Reader) {
	io.Copy(io.Discard, in)
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

// nopWriteCloser keeps the transport from closing the caller's writer.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
