package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/atomicfile"
	"mcpx.dev/mcpx/wire"
)

// The daemon record: daemon.json (wire.RecordFile) and the token file in
// the state directory, which tell clients where this daemon is and how to
// reach it (client.ReadRecord).

// Info describes this process as the daemon of state on sock (and tln, the
// loopback TCP listener, if not nil) for the record and GET /v1/whoami.
func Info(state, sock string, tln net.Listener, src Source, version string) wire.DaemonInfo {
	info := wire.DaemonInfo{Pid: os.Getpid(), Version: version, Socket: sock, Config: src.Path,
		State: state, Started: time.Now().UTC().Truncate(time.Second)}
	if tln != nil {
		info.Address = tln.Addr().String()
	}
	return info
}

// WriteRecord publishes the daemon record and the token file in the state
// directory, each mode 0600 and replaced atomically. A record of another
// daemon that is still serving is not replaced: two daemons must not share
// a state directory. One of a daemon that died (its pid is gone, or its
// socket no longer answers) is stale and replaced.
func WriteRecord(info wire.DaemonInfo, token string) error {
	if old, err := client.ReadRecord(info.State); err == nil && old.Pid != info.Pid && Alive(old.Pid) && client.Answers(old.Socket) {
		return fmt.Errorf("another daemon (pid %d, socket %s) uses the state directory %s: stop it with `mcpx daemon stop`, or pass --state-dir", old.Pid, old.Socket, info.State)
	}
	rec := wire.DaemonRecord{DaemonInfo: info, Token: token, TokenFile: filepath.Join(info.State, wire.TokenFile)}
	if info.Address != "" {
		rec.URL = "http://" + info.Address
	}
	doc, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(rec.TokenFile, []byte(token+"\n"), 0o600); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(info.State, wire.RecordFile), append(doc, '\n'), 0o600)
}

// RemoveRecord removes the record and the token at a clean shutdown, if
// they are still this process's.
func RemoveRecord(log *slog.Logger, state string) {
	rec, err := client.ReadRecord(state)
	if err != nil || rec.Pid != os.Getpid() {
		return
	}
	for _, name := range []string{wire.RecordFile, wire.TokenFile} {
		if err := os.Remove(filepath.Join(state, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Warn("removing the daemon record", "err", err)
		}
	}
}

// Alive reports whether process pid exists (and is not a zombie).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !zombie(pid)
}

// WaitGone waits until process pid is gone (Alive is false), polling,
// until ctx ends; it reports whether the process went.
func WaitGone(ctx context.Context, pid int) bool {
	for Alive(pid) {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true
}
