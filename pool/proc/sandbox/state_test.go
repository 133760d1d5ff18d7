package sandbox_test

import (
	"testing"

	"mcpx.dev/mcpx/pool/proc/sandbox"
)

// TestResumedCellCloses: a Cell made again of a handed-over State, with no
// helper socket, closes (once) like any other.
func TestResumedCellCloses(t *testing.T) {
	c := sandbox.Resume(sandbox.State{Policy: sandbox.Policy{Mode: sandbox.BestEffort}}, nil)
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if got := c.Limit(nil); got != "" {
		t.Errorf("Limit of no exit: %q", got)
	}
}
