package wire

// The daemon's log, GET /v1/log (admin): an SSE stream of StreamLog events,
// the kept records that the query selects, oldest first, then with
// ?follow=true the records written from then on. A follower that reads
// too slowly is sent StreamLogDropped with the count it missed.
const (
	StreamLog        = "log"     // data: a LogRecord
	StreamLogDropped = "dropped" // data: LogDroppedData
	// The query parameters of GET /v1/log, besides QuerySince (a duration
	// back from now, or an RFC 3339 time) and QueryFollow.
	QueryServer = "server" // only the records that name this server
	QueryLevel  = "level"  // only records at or above: debug, info, warn, error (default info)
	QueryFollow = "follow" // true: after the kept records, follow new ones
)

// LogRecord is one record of the daemon's log as its JSON handler wrote
// it: "time", "level" and "msg", then the record's attributes ("server",
// "key", "pid", "err", a child's stderr "line", ...).
type LogRecord map[string]any

// LogDroppedData is the data of a StreamLogDropped event.
type LogDroppedData struct {
	Dropped int `json:"dropped"` // records the follower did not receive
}
