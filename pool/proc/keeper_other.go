//go:build !linux

package proc

import (
	"errors"
	"log/slog"
	"net"
	"os"
)

// Without a watchdog (non-Linux) no child outlives its daemon: nothing is
// kept (see keeper_linux.go).

var errNoKeeper = errors.New("children cannot outlive the daemon on this system")

type held struct{ Mark string }

func (held) close() {}

func keeperPair() (*os.File, error)                    { return nil, errNoKeeper }
func closeKeeper()                                     {}
func (*Process) Keep() error                           { return errNoKeeper }
func dropChild(*Process)                               {}
func keep(int) (map[string]held, bool)                 { return nil, false }
func Bye()                                             {}
func keeperListener(string) *os.File                   { return nil }
func inheritedKeeper(string) *net.UnixListener         { return nil }
func removeKeeperSock(string)                          {}
func handOver(*net.UnixListener, map[string]held) bool { return false }
func reclaim(string, *slog.Logger) map[string]bool     { return nil }
func TakeSurvivor(string) (Inherited, bool)            { return Inherited{}, false }
func KillSurvivors(*slog.Logger) int                   { return 0 }

func daemonAlive(string) bool       { return false }
func waitNotOurs(int, uint64) error { return errNoKeeper }
