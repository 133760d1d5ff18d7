package config

import (
	"fmt"
	"strings"

	"mcpx.dev/mcpx/internal/suggest"
)

// hintFor suggests the closest known name to got, or lists them all.
func hintFor(got string, known []string, what string) string {
	if s := suggest.Closest(got, known); s != "" {
		return fmt.Sprintf("did you mean %q?", s)
	}
	return fmt.Sprintf("known %s: %s", what, strings.Join(known, ", "))
}

// clientHint is hintFor for a key of mcpx's own (known), which also
// suggests the closest key of a client format (client) that mcpx accepts,
// but lists only its own.
func clientHint(got string, known, client []string, what string) string {
	if s := suggest.Closest(got, client); s != "" && suggest.Closest(got, known) == "" {
		return fmt.Sprintf("did you mean %q?", s)
	}
	return hintFor(got, known, what)
}
