//go:build !linux && !darwin

package api

import (
	"errors"
	"net"
)

var errNoPeerCred = errors.New("peer credentials are not supported on this platform")

// peerCred is unsupported here: unix-socket callers are refused.
func peerCred(c *net.UnixConn) (uid, pid int, err error) { return 0, 0, errNoPeerCred }

// otherUserNS is unsupported here; unix-socket callers are refused anyway.
func otherUserNS(pid int) (bool, error) { return false, errNoPeerCred }

// parentOf is unsupported here; unix-socket callers are refused anyway.
func parentOf(pid int) (int, error) { return 0, errNoPeerCred }
