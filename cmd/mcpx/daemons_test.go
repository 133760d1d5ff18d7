package main

import (
	"io"
	"strings"
	"testing"
)

// Every command's flags parse: --config, added to every broker client,
// clashes with no command's own flag (a clash panics).
func TestEveryCommandsFlags(t *testing.T) {
	for _, cmd := range commands() {
		if cmd.run == nil || cmd.name == "demo-server" || cmd.name == "hook" {
			continue
		}
		t.Run(cmd.name, func(t *testing.T) {
			run(t.Context(), []string{cmd.name, "-h"}, strings.NewReader(""), io.Discard, io.Discard)
		})
	}
}
