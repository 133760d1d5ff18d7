package proc_test

import (
	"os"
	"testing"

	"mcpx.dev/mcpx/pool/proc"
)

func TestMain(m *testing.M) {
	proc.MaybeWatch()
	if os.Getenv(envStandIn) != "" {
		supervisedDaemon()
	}
	os.Exit(m.Run())
}
