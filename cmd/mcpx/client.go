package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzhttp"

	"mcpx.dev/mcpx/api"
)

// brokerClient talks to a running daemon over its unix socket or a URL.
type brokerClient struct {
	addr   string // as the user named it, for messages
	base   string // URL prefix of the API
	unix   bool   // over the unix socket: send Mcpx-Pid
	hc     *http.Client
	getenv func(string) string
}

// brokerFlag registers --broker on fs.
func brokerFlag(fs *flag.FlagSet) *string {
	return fs.String("broker", "", "the daemon: a unix socket path or http://127.0.0.1:PORT (default $MCPX_BROKER, else the default socket)")
}

// newBrokerClient resolves --broker, then $MCPX_BROKER, then the default
// socket. Nothing is dialled until the first request.
func newBrokerClient(c *cli, flagValue string) (*brokerClient, error) {
	addr := flagValue
	if addr == "" {
		addr = c.getenv("MCPX_BROKER")
	}
	if addr == "" {
		sock, err := defaultSocket(c.getenv)
		if err != nil {
			return nil, err
		}
		addr = sock
	}
	bc := &brokerClient{addr: addr, getenv: c.getenv}
	tr := &http.Transport{
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true, // gzhttp.Transport negotiates zstd and gzip
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	switch {
	case strings.HasPrefix(addr, "http://"), strings.HasPrefix(addr, "https://"):
		bc.base = strings.TrimSuffix(addr, "/")
		tr.DialContext = dialer.DialContext
	default:
		sock := strings.TrimPrefix(addr, "unix://")
		bc.addr, bc.base, bc.unix = sock, "http://mcpx", true
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", sock)
		}
	}
	bc.hc = &http.Client{Transport: gzhttp.Transport(tr)}
	return bc, nil
}

// unreachableError is a failure to connect to the daemon at all.
type unreachableError struct {
	addr string
	unix bool
	err  error
}

func (e *unreachableError) Error() string {
	hint := "is `mcpx serve` running? start it with `mcpx serve`"
	if e.unix {
		hint = fmt.Sprintf("is `mcpx serve` running? socket %s; start it with `mcpx serve`", e.addr)
	}
	return fmt.Sprintf("cannot reach the broker at %s: %v\n%s", e.addr, unwrapDial(e.err), hint)
}

// unwrapDial shortens "dial unix /x: connect: no such file or directory" to
// its cause.
func unwrapDial(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// callerHeaders are the Mcpx-* headers describing this process.
type callerOpts struct {
	cwd     string // --cwd; "" = $PWD (if it is the working directory), else os.Getwd
	session string // --session; "" = $MCPX_SESSION_ID
}

func (bc *brokerClient) callerHeaders(o callerOpts) (http.Header, error) {
	h := http.Header{}
	cwd, err := callerCwd(o.cwd, bc.getenv)
	if err != nil {
		return nil, err
	}
	h.Set(api.HeaderCwd, cwd)
	session := o.session
	if session == "" {
		session = bc.getenv("MCPX_SESSION_ID")
	}
	if session != "" {
		h.Set(api.HeaderSession, session)
	}
	if p := bc.getenv("MCPX_PARENT_SESSION_ID"); p != "" {
		h.Set(api.HeaderParentSession, p)
	}
	if bc.unix {
		// The CLI lives for one call; a pid-scoped instance belongs to the
		// process that runs it (the shell or the agent), so send the parent.
		h.Set(api.HeaderPid, strconv.Itoa(os.Getppid()))
	}
	return h, nil
}

// callerCwd is --cwd made absolute, else $PWD, else os.Getwd. $PWD keeps
// the path the user sees (symlinks included) but is only used when it names
// the working directory: a program that starts mcpx in another directory
// often passes its own PWD along, and a stale PWD would pick the wrong scope.
func callerCwd(flagValue string, getenv func(string) string) (string, error) {
	if flagValue != "" {
		abs, err := filepath.Abs(flagValue)
		if err != nil {
			return "", fmt.Errorf("--cwd: %w", err)
		}
		return abs, nil
	}
	if pwd := getenv("PWD"); filepath.IsAbs(pwd) {
		a, errA := os.Stat(pwd)
		b, errB := os.Stat(".")
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return pwd, nil
		}
	}
	return os.Getwd()
}

// do sends a request. A connection failure is an *unreachableError; an
// error status is decoded into an *api.Problem. On success the caller owns
// and must close the response body.
func (bc *brokerClient) do(ctx context.Context, method, path string, body []byte, h http.Header) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, bc.base+path, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := bc.hc.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, &unreachableError{addr: bc.addr, unix: bc.unix, err: err}
		}
		return nil, err
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		return nil, readProblem(resp)
	}
	return resp, nil
}

// getJSON GETs path and decodes the JSON answer into v; raw, if non-nil,
// receives the undecoded body.
func (bc *brokerClient) getJSON(ctx context.Context, path string, h http.Header, v any, raw *[]byte) error {
	resp, err := bc.do(ctx, "GET", path, nil, h)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading the broker's answer: %w", err)
	}
	if raw != nil {
		*raw = b
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decoding the broker's answer: %w", err)
	}
	return nil
}

// readProblem decodes an error response. Anything that is not a problem
// document (a proxy's error page) becomes one with the status text.
func readProblem(resp *http.Response) *api.Problem {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var p api.Problem
	if err := json.Unmarshal(b, &p); err != nil || p.Detail == "" {
		p = api.Problem{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode),
			Detail: strings.TrimSpace(fmt.Sprintf("%s: %s", resp.Status, b))}
	}
	if p.Status == 0 {
		p.Status = resp.StatusCode
	}
	return &p
}

// report prints err for the user and returns the exit code for it.
func report(c *cli, err error) int {
	var unreachable *unreachableError
	var p *api.Problem
	switch {
	case errors.As(err, &unreachable):
		fmt.Fprintf(c.stderr, "mcpx: %v\n", err)
		return exitUnreachable
	case errors.As(err, &p):
		fmt.Fprintf(c.stderr, "mcpx: %s\n", problemText(p))
		if p.StderrTail != "" {
			fmt.Fprintf(c.stderr, "server stderr (last lines):\n%s\n", strings.TrimRight(p.StderrTail, "\n"))
		}
		return exitFailed
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(c.stderr, "mcpx: interrupted")
		return exitFailed
	default:
		fmt.Fprintf(c.stderr, "mcpx: %v\n", err)
		return exitFailed
	}
}

// problemText is one line: what failed and why.
func problemText(p *api.Problem) string {
	s := p.Detail
	if p.Server != "" && !strings.Contains(s, p.Server) {
		s = fmt.Sprintf("server %s: %s", p.Server, s)
	}
	if p.Status != 0 {
		s += fmt.Sprintf(" (%d %s)", p.Status, strings.TrimPrefix(p.Type, api.ProblemTypeBase))
	}
	return s
}
