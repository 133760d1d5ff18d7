package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"mcpx.dev/mcpx/internal/atomicfile"
	"mcpx.dev/mcpx/internal/paths"
	"mcpx.dev/mcpx/wire"
)

// The daemon record: daemon.json (wire.RecordFile) and the token file in
// the state directory, which tell clients where this daemon is and how to
// reach it (paths.ReadRecord).

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

// Record is the daemon record this process published (PublishRecord):
// Rewrite keeps it naming the config in force, Remove takes it down at a
// clean shutdown.
type Record struct {
	log   *slog.Logger
	token string

	mu   sync.Mutex
	info wire.DaemonInfo // guarded by mu
}

// PublishRecord publishes the daemon record and the token file in the
// state directory (info.State), each mode 0600 and replaced atomically. A
// record of another daemon that is still serving is not replaced: two
// daemons must not share a state directory. One of a daemon that died
// (its pid is gone, or its socket no longer answers) is stale and
// replaced. log gets what Rewrite and Remove cannot do.
func PublishRecord(log *slog.Logger, info wire.DaemonInfo, token string) (*Record, error) {
	if old, err := paths.ReadRecord[wire.DaemonRecord](info.State); err == nil && old.Pid != info.Pid && paths.Alive(old.Pid) && paths.Answers(old.Socket) {
		return nil, fmt.Errorf("another daemon (pid %d, socket %s) uses the state directory %s: stop it with `mcpx daemon stop`, or pass --state-dir", old.Pid, old.Socket, info.State)
	}
	if err := writeRecord(info, token); err != nil {
		return nil, err
	}
	return &Record{log: log, token: token, info: info}, nil
}

// Rewrite republishes the record naming src's config: Control calls it
// after each reload that put a config in force (Control.AfterReload), as
// the config in force may be another file than at start (the default
// config written after a start on the built-in one).
func (r *Record) Rewrite(src Source) {
	r.mu.Lock()
	defer r.mu.Unlock()
	info := r.info
	info.Config = src.Path
	if err := writeRecord(info, r.token); err != nil {
		r.log.Warn("republishing the daemon record after a reload", "err", err)
		return
	}
	r.info = info
}

// Remove removes the record and the token, if they are still this
// process's.
func (r *Record) Remove() {
	r.mu.Lock()
	defer r.mu.Unlock()
	state := r.info.State
	rec, err := paths.ReadRecord[wire.DaemonRecord](state)
	if err != nil || rec.Pid != r.info.Pid {
		return
	}
	for _, name := range []string{wire.RecordFile, wire.TokenFile} {
		if err := os.Remove(filepath.Join(state, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			r.log.Warn("removing the daemon record", "err", err)
		}
	}
}

// writeRecord writes info's record and token file.
func writeRecord(info wire.DaemonInfo, token string) error {
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
