package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"time"
)

// envRawHTTP=<socket path> makes this binary serve rawEcho on that unix
// socket until its stdin closes: the Hx path, one HTTP hop to another
// process, like the hop to the daemon but with nothing behind it.
const envRawHTTP = "MCPX_BENCH_RAW_HTTP"

func serveRawHTTP(sock string) int {
	return serveChildHTTP("unix", sock, http.HandlerFunc(rawEcho), "raw http")
}

// serveChildHTTP serves h on addr until this process's stdin closes (the
// parent closed it, or died): the server side of startRawHTTP.
func serveChildHTTP(network, addr string, h http.Handler, name string) int {
	ln, err := net.Listen(network, addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 1
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		io.Copy(io.Discard, os.Stdin)
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 1
	}
	return 0
}

// rawHTTP is a running serveChildHTTP child.
type rawHTTP struct {
	cmd    *exec.Cmd
	stdin  io.Closer
	exited chan struct{}
}

// startRawHTTP starts cmd (this binary with envRawHTTP or envFloor set) and
// waits until it accepts connections on addr (network "unix" or "tcp").
func startRawHTTP(ctx context.Context, cmd *exec.Cmd, network, addr string) (*rawHTTP, error) {
	cmd.SysProcAttr = childAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &rawHTTP{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(s.exited)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial(network, addr)
		if err == nil {
			c.Close()
			return s, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.stop()
			return nil, fmt.Errorf("%s not up after 10s: %w", cmd.Path, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *rawHTTP) stop() {
	s.stdin.Close()
	select {
	case <-s.exited:
		return
	case <-time.After(2 * time.Second):
	}
	s.cmd.Process.Kill()
	<-s.exited
}
