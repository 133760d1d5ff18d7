package daemonlog

import (
	"context"
	"log/slog"
	"slices"
)

// ServerKey is the attribute that names a record's server; a record (or a
// logger derived With it) that has one is logged at that server's level.
const ServerKey = "server"

// ScopeKey is the attribute that names a record's scope key; a record (or
// a logger derived With it) whose key is a session's (session:, psession:,
// lease:, pid:) is logged at that session's level, if it has one.
const ScopeKey = "key"

// Levels are the log's levels, most specific first: Sessions for the
// records that name a scope key (ScopeKey), Servers for those that name a
// server (ServerKey), Level for every other.
type Levels struct {
	Level    slog.Level
	Servers  map[string]slog.Level
	Sessions map[string]slog.Level // by scope key: "session:agent-7"
}

// of is the level of a record naming server and key ("" = none).
func (lv Levels) of(server, key string) slog.Level {
	if l, ok := lv.Sessions[key]; ok && key != "" {
		return l
	}
	if l, ok := lv.Servers[server]; ok && server != "" {
		return l
	}
	return lv.Level
}

// floor is the lowest level a record of a logger that names server and
// key ("" = not yet) may be logged at: what they say, or, where the record
// may yet name them, the lowest that it could.
func (lv Levels) floor(server, key string) slog.Level {
	if l, ok := lv.Sessions[key]; ok && key != "" {
		return l
	}
	low := lv.of(server, "")
	if server == "" {
		for _, l := range lv.Servers {
			low = min(low, l)
		}
	}
	if key == "" {
		for _, l := range lv.Sessions {
			low = min(low, l)
		}
	}
	return low
}

// handler filters by Levels and hands what passes to every handler in
// out (each must accept every level: give them slog.LevelDebug, the
// lowest, or leave their levels nil and set Levels.Level to info).
type handler struct {
	lv     Levels
	out    slog.Handler
	server string // from a With(ServerKey, ...) of this logger; "" = none yet
	key    string // from a With(ScopeKey, ...); "" = none yet
}

// NewHandler returns a handler that logs each record at its session's,
// else its server's, else the global level (Levels) to every one of out.
func NewHandler(lv Levels, out ...slog.Handler) slog.Handler {
	return &handler{lv: lv, out: slog.NewMultiHandler(out...)}
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool {
	// The record may yet name a server or a key (Handle decides).
	return l >= h.lv.floor(h.server, h.key)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	server, key := h.server, h.key
	if server == "" || key == "" {
		r.Attrs(func(a slog.Attr) bool {
			switch {
			case a.Key == ServerKey && server == "":
				server = a.Value.String()
			case a.Key == ScopeKey && key == "":
				key = a.Value.String()
			}
			return server == "" || key == ""
		})
	}
	if r.Level < h.lv.of(server, key) {
		return nil
	}
	return h.out.Handle(ctx, r)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h2 := *h
	if i := slices.IndexFunc(attrs, func(a slog.Attr) bool { return a.Key == ServerKey }); i >= 0 && h.server == "" {
		h2.server = attrs[i].Value.String()
	}
	if i := slices.IndexFunc(attrs, func(a slog.Attr) bool { return a.Key == ScopeKey }); i >= 0 && h.key == "" {
		h2.key = attrs[i].Value.String()
	}
	h2.out = h.out.WithAttrs(attrs)
	return &h2
}

func (h *handler) WithGroup(name string) slog.Handler {
	h2 := *h
	h2.out = h.out.WithGroup(name)
	return &h2
}
