package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/observe/daemonlog"
	"mcpx.dev/mcpx/wire"
)

// errLogDone ends a read of the log early: the client went away.
var errLogDone = errors.New("client gone")

// streamLog answers the daemon's log (package logs) as server-sent
// events: the kept records the query selects, then, with ?follow=true,
// the new ones as they are written. Admins only: the log names paths,
// commands, keys and children's stderr.
func (s *server) streamLog(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	if !c.Rights.Admin() {
		return &broker.Error{Kind: broker.KindForbidden, Op: "log",
			Msg: "only an admin may read the daemon's log: it names paths, commands and children's stderr"}
	}
	if s.logFile == nil {
		return &broker.Error{Kind: broker.KindUnavailable, Op: "log", Msg: "this daemon keeps no log file",
			Hint: "`mcpx serve` keeps one in the state directory's logs/"}
	}
	q, follow, err := logQuery(r, time.Now())
	if err != nil {
		return err
	}
	if q.Key, err = s.sessionQuery(c, r, "log"); err != nil {
		return err
	}
	// Follow before reading back, so that nothing written meanwhile is
	// lost; a record written in between may come twice.
	var fw *daemonlog.Follower
	if follow {
		fw = s.logFile.Follow(q)
		defer fw.Stop()
	}
	ev := newEventWriter(w)
	err = s.logFile.Read(q, func(line []byte) error {
		ev.send(wire.StreamLog, line)
		if ev.err != nil {
			return errLogDone
		}
		return nil
	})
	if err != nil && !errors.Is(err, errLogDone) {
		s.log.Warn("reading the log for a client", "err", err)
	}
	if fw == nil {
		return nil
	}
	ctx, stop := s.watchRights(r)
	defer stop()
	pump(s, ctx, ev, fw.Ready(), func(ev *eventWriter, _ struct{}) bool {
		lines, dropped, done := fw.Take()
		if dropped > 0 {
			data, _ := json.Marshal(wire.LogDroppedData{Dropped: dropped})
			ev.send(wire.StreamLogDropped, data)
		}
		for _, l := range lines {
			ev.send(wire.StreamLog, l)
		}
		return done
	})
	return nil
}

// parseSince reads a ?since= value: a positive duration back from now, or an
// RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, bool) {
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), true
	}
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}

// logQuery reads ?since=, ?server=, ?level= and ?follow= (the caller
// resolves ?session=).
func logQuery(r *http.Request, now time.Time) (q daemonlog.Query, follow bool, err error) {
	v := r.URL.Query()
	bad := func(field, msg, hint string) (daemonlog.Query, bool, error) {
		return q, false, &broker.Error{Kind: broker.KindBadRequest, Op: "log", Field: field, Msg: msg, Hint: hint}
	}
	if s := v.Get(wire.QuerySince); s != "" {
		var ok bool
		if q.Since, ok = parseSince(s, now); !ok {
			return bad(wire.QuerySince, "since is neither a positive duration nor an RFC 3339 time",
				`use a duration back from now such as "1h", or a time such as "2026-11-30T12:00:00Z"`)
		}
	}
	q.Server = v.Get(wire.QueryServer)
	q.Level = slog.LevelInfo
	if s := v.Get(wire.QueryLevel); s != "" {
		if q.Level, err = daemonlog.ParseLevel(s); err != nil {
			return bad(wire.QueryLevel, err.Error(), "")
		}
	}
	switch v.Get(wire.QueryFollow) {
	case "", "false", "0":
	case "true", "1":
		follow = true
	default:
		return bad(wire.QueryFollow, "follow must be true or false", "")
	}
	return q, follow, nil
}
