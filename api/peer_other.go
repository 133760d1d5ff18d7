//go:build !linux && !darwin

package api

import "net"

// peerCred is unsupported here: unix-socket callers are refused.
func peerCred(c *net.UnixConn) (uid int, err error) { return 0, errNoPeerCred }
