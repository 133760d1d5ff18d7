package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"mcpx.dev/mcpx/internal/sse"
	"mcpx.dev/mcpx/wire"
)

// LogQuery selects the daemon's log records (GET /v1/log); zero fields
// select all at info and above, with no follow.
type LogQuery struct {
	Since  string // a duration back from now ("1h") or an RFC 3339 time; "" = every kept record
	Server string // only records naming this server
	// Session keeps only the records naming this session's key; the
	// session by its key or its name.
	Session string
	Level   string // debug, info, warn or error; "" = info
	Follow  bool   // after the kept records, stream new ones until ctx ends
}

// Log reads the daemon's log (admin): fn gets each record's JSON, oldest
// first; with q.Follow, then each new one as it is written, until ctx ends
// or fn fails. A follower too slow to keep up gets a record
// {"msg":"log records dropped","dropped":n} in their place.
func (c *Client) Log(ctx context.Context, q LogQuery, fn func(json.RawMessage) error) error {
	v := url.Values{}
	for k, s := range map[string]string{wire.QuerySince: q.Since, wire.QueryServer: q.Server, wire.QuerySession: q.Session, wire.QueryLevel: q.Level} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Follow {
		v.Set(wire.QueryFollow, "true")
	}
	query := ""
	if len(v) > 0 {
		query = "?" + v.Encode()
	}
	resp, err := c.send(ctx, wire.OpLog, nil, nil, http.Header{"Accept": {wire.MediaEventStream}}, query)
	if err != nil {
		return err
	}
	return readStream(ctx, resp, 4<<20, "the log stream", func(ev sse.Event) error {
		data := ev.Data
		if ev.Event == wire.StreamLogDropped {
			var dd wire.LogDroppedData
			json.Unmarshal(ev.Data, &dd)
			data, _ = json.Marshal(map[string]any{"level": "WARN", "msg": "log records dropped", "dropped": dd.Dropped})
		}
		return fn(data)
	})
}
