package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// InheritEnv says which of the daemon's environment variables a command
// server's child gets beyond the allowlist (HOME, LOGNAME, PATH, SHELL,
// TERM, USER, LANG, LC_*, TMPDIR). In JSON it is true (everything, the
// daemon's secrets included), false (the zero value: the allowlist only) or
// a list of names such as ["AWS_PROFILE", "SSH_AUTH_SOCK"].
type InheritEnv struct {
	All   bool
	Names []string
}

// IsZero reports whether ie passes nothing beyond the allowlist, for
// omitempty.
func (ie InheritEnv) IsZero() bool { return !ie.All && len(ie.Names) == 0 }

// MarshalJSON writes true or the list of names (false when empty).
func (ie InheritEnv) MarshalJSON() ([]byte, error) {
	if ie.All || len(ie.Names) == 0 {
		return json.Marshal(ie.All)
	}
	return json.Marshal(ie.Names)
}

// UnmarshalJSON reads true, false or a list of variable names.
func (ie *InheritEnv) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var names []string
		if err := json.Unmarshal(b, &names); err != nil {
			return fmt.Errorf("want true, false or a list of variable names such as [\"AWS_PROFILE\"]")
		}
		for _, n := range names {
			if n == "" || strings.ContainsAny(n, "=\x00") {
				return fmt.Errorf("invalid environment variable name %q: names may not be empty or contain = or NUL", n)
			}
		}
		*ie = InheritEnv{Names: names}
		return nil
	}
	var all bool
	if err := json.Unmarshal(b, &all); err != nil {
		return fmt.Errorf("want true, false or a list of variable names such as [\"AWS_PROFILE\"]")
	}
	*ie = InheritEnv{All: all}
	return nil
}
