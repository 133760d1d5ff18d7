package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"mcpx.dev/mcpx/client"
)

// Where mcpx keeps things, per the XDG base directory specification: a
// variable that is unset or not absolute is ignored.

// defaultSocket is the daemon's socket path, shared by `mcpx serve` and every
// client: $XDG_RUNTIME_DIR/mcpx/mcpx.sock, else $XDG_STATE_HOME/mcpx/mcpx.sock
// (~/.local/state/mcpx/mcpx.sock). See client.DefaultSocket.
func defaultSocket(getenv func(string) string) (string, error) {
	return client.DefaultSocket(getenv)
}

// stateDir is $XDG_STATE_HOME/mcpx (~/.local/state/mcpx).
func stateDir(getenv func(string) string) (string, error) {
	return client.StateDir(getenv)
}

// defaultConfigPath is $XDG_CONFIG_HOME/mcpx/config.json
// (~/.config/mcpx/config.json). See client.DefaultConfig.
func defaultConfigPath(getenv func(string) string) (string, error) {
	return client.DefaultConfig(getenv)
}

// goRunExe matches the binary `go run` builds: $GOTMPDIR (or $TMPDIR)
// /go-buildNNN/bNNN/exe/<name>, deleted when go run exits. (`go test`'s are
// bNNN/<name>.test, not under exe/.)
var goRunExe = regexp.MustCompile(`/go-build[0-9]+/b[0-9]+/exe/[^/]+$`)

// installedBinary is this executable, for a unit or a hook to run later
// (symlinks resolved). For an install (strict), the temporary binary of
// `go run` is refused: the file it names would be gone by then.
func installedBinary(strict bool) (string, error) {
	bin, err := os.Executable()
	if err == nil {
		bin, err = filepath.EvalSymlinks(bin)
	}
	if err != nil {
		return "", fmt.Errorf("finding this binary: %w (give --binary)", err)
	}
	if strict && goRunExe.MatchString(bin) {
		return "", fmt.Errorf("this mcpx is `go run`'s temporary build (%s), which Go deletes when it exits: "+
			"`go install ./cmd/mcpx` (it goes to $(go env GOPATH)/bin) and run that mcpx, or give --binary", bin)
	}
	return bin, nil
}
