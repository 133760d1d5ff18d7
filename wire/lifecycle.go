package wire

// QueryForce on POST /v1/daemon/stop: "true" stops every child at once,
// cutting the calls in flight, instead of draining them.
const QueryForce = "force"

// Restarted is the answer of POST /v1/servers/{server}/restart.
type Restarted struct {
	Server string `json:"server"`
	// Replaced are the instances whose child was drained, each with a new
	// one started at once under the same key.
	Replaced []string `json:"replaced"`
	// Stopped are the instances that had no child (idle, backing off) or
	// served one call: stopped, the next call starts afresh.
	Stopped []string `json:"stopped"`
}

// Refreshed is the answer of POST /v1/refresh.
type Refreshed struct {
	Server string `json:"server,omitempty"` // the server refreshed; "" = every server
	// Dropped is how many schema cache entries (tools, prompts and
	// resources lists, initialize answers) were dropped.
	Dropped int `json:"dropped"`
	// Listed are the running instances whose tools were listed again.
	Listed []string `json:"listed"`
	// Failed are the running instances whose listing failed, with why
	// (the daemon's owner only; others see that it failed).
	Failed map[string]string `json:"failed,omitempty"`
}
