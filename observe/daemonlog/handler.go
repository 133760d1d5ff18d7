package daemonlog

import (
	"context"
	"log/slog"
	"slices"
)

// ServerKey is the attribute that names a record's server; a record (or a
// logger derived With it) that has one is logged at that server's level.
const ServerKey = "server"

// Levels are the log's levels: Level for every record, Servers for those
// that name a server (ServerKey).
type Levels struct {
	Level   slog.Level
	Servers map[string]slog.Level
}

// lowest is the lowest level any record may be logged at.
func (lv Levels) lowest() slog.Level {
	low := lv.Level
	for _, l := range lv.Servers {
		low = min(low, l)
	}
	return low
}

func (lv Levels) of(server string) slog.Level {
	if l, ok := lv.Servers[server]; ok && server != "" {
		return l
	}
	return lv.Level
}

// handler filters by Levels and hands what passes to every handler in
// out (each must accept every level: give them slog.LevelDebug, the
// lowest, or leave their levels nil and set Levels.Level to info).
type handler struct {
	lv     Levels
	out    slog.Handler
	server string // from a With(ServerKey, ...) of this logger; "" = none yet
}

// NewHandler returns a handler that logs each record at its server's
// level (Levels) to every one of out.
func NewHandler(lv Levels, out ...slog.Handler) slog.Handler {
	return &handler{lv: lv, out: slog.NewMultiHandler(out...)}
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool {
	if h.server != "" {
		return l >= h.lv.of(h.server)
	}
	// The record may yet name a server (Handle decides).
	return l >= h.lv.lowest()
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	server := h.server
	if server == "" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == ServerKey {
				server = a.Value.String()
				return false
			}
			return true
		})
	}
	if r.Level < h.lv.of(server) {
		return nil
	}
	return h.out.Handle(ctx, r)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h2 := *h
	if i := slices.IndexFunc(attrs, func(a slog.Attr) bool { return a.Key == ServerKey }); i >= 0 && h.server == "" {
		h2.server = attrs[i].Value.String()
	}
	h2.out = h.out.WithAttrs(attrs)
	return &h2
}

func (h *handler) WithGroup(name string) slog.Handler {
	h2 := *h
	h2.out = h.out.WithGroup(name)
	return &h2
}
