package bridge_test

import (
	"context"
	"os"
	"testing"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/mcp/bridge"
)

// serveEnv names the endpoint a re-executed test binary bridges to: the
// test binary is then the bridge on its stdin and stdout, as `mcpx mcp`
// is, for clients that spawn a command.
const serveEnv = "MCPBRIDGE_TEST_SERVE"

func TestMain(m *testing.M) {
	if url := os.Getenv(serveEnv); url != "" {
		err := bridge.Serve(context.Background(), os.Stdin, os.Stdout, bridge.Options{
			Client: client.New(url, client.Options{Token: "test-token"})})
		if err != nil {
			os.Stderr.WriteString("bridge: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
