package wire

// StreamEnd is the last event of a long-lived stream (GET /v1/events, GET
// /v1/log with follow) that the broker ends because its caller's rights no
// longer cover it: a token revoked or expired, a grant taken away or
// changed. Its data is StreamEndData. The caller may reconnect: it is
// then answered with its rights as they are. A streamed tool call ends the
// same way with a StreamError problem instead (a call's stream ends with
// one result or error).
const StreamEnd = "end"

// StreamEndData is the data of a StreamEnd event.
type StreamEndData struct {
	Reason string `json:"reason"` // why the stream ended, for a person
}
