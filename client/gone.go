package client

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
)

// GoneError: the daemon closed the connection before it answered — it
// stopped, or died (a SIGKILLed daemon). The request may have run.
type GoneError struct {
	Addr string // the socket path or URL
	Err  error
}

func (e *GoneError) Error() string {
	return fmt.Sprintf("the broker at %s closed the connection before answering: it stopped or died (the request may have run; `mcpx daemon info` says whether a daemon runs now): %v", e.Addr, e.Err)
}

func (e *GoneError) Unwrap() error { return e.Err }

// sendError is the error of a request that failed with err: a dial that
// failed is an *UnreachableError, a connection the daemon closed before
// its answer a *GoneError; others are err itself.
func (c *Client) sendError(err error) error {
	var op *net.OpError
	switch {
	case errors.As(err, &op) && op.Op == "dial":
		return &UnreachableError{Addr: c.addr, Unix: c.unix, Err: err}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return &GoneError{Addr: c.addr, Err: err}
	}
	return err
}
