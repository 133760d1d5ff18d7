package pool

import (
	"errors"
	"os/exec"
	"path/filepath"

	"mcpx.dev/mcpx/internal/launcher"
)

// missingHint is the fix for a command that would not start: how to get
// it, when it is a launcher that is not installed (uvx, docker, dnx, node:
// what `mcpx registry add` writes), else the general advice.
func missingHint(command string, err error) string {
	if errors.Is(err, exec.ErrNotFound) {
		if h := launcher.Hint(filepath.Base(command)); h != "" {
			return h + ", on the daemon's machine (its PATH)"
		}
	}
	return "check the server's command and that it is installed on the daemon's machine"
}
