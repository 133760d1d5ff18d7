package conformance

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/testing/proctest"
)

// TestEverythingOverStdio: the binary mcpx fronts serves the suite's tools
// on stdin/stdout, in both eras.
func TestEverythingOverStdio(t *testing.T) {
	proctest.CheckNoLeaks(t)
	bin := EverythingBinary(t)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "conformance-test", Version: "1"}, nil)
			s, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin)}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.InitializeResult().ProtocolVersion; got != version {
				t.Errorf("negotiated %s, want %s", got, version)
			}
			var names []string
			for tool, err := range s.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tool.Name)
			}
			for _, want := range []string{"test_simple_text", "test_sampling", "test_tool_with_progress"} {
				if !slices.Contains(names, want) {
					t.Errorf("no tool %s among %v", want, names)
				}
			}
		})
	}
}
