package scripts

import (
	"bufio"
	"encoding/json"
	"os"
)

// Call is one tool call a script made, as the generated client reported it.
type Call struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Ms is the call's duration in milliseconds, as the script saw it.
	Ms int64 `json:"ms"`
	// Outcome is "ok", "isError", or the error's kind ("canceled",
	// "timeout", "not-found", ...; "error" when the broker was not reached).
	Outcome string `json:"outcome"`
}

// Envelope is `mcpx run --json`'s one document.
type Envelope struct {
	Script   string `json:"script"`
	Runtime  string `json:"runtime"`
	Session  string `json:"session"`
	ExitCode int    `json:"exitCode"`
	// DurationMs is the run's wall time, bundling and the runtime's start
	// included.
	DurationMs int64  `json:"durationMs"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	// Result is stdout parsed as JSON when it is exactly one JSON value;
	// absent otherwise.
	Result json.RawMessage `json:"result,omitempty"`
	Calls  []Call          `json:"calls"`
}

// ReadCalls reads the calls a runner reported to path, in order. A line
// that is not a Call (a script killed mid-write) is skipped.
func ReadCalls(path string) ([]Call, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	calls := []Call{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c Call
		if json.Unmarshal(sc.Bytes(), &c) == nil && c.Server != "" {
			calls = append(calls, c)
		}
	}
	return calls, sc.Err()
}
