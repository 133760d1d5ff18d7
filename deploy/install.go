package deploy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"mcpx.dev/mcpx/wire"
)

// ServerOptions are `mcpx install`'s choices of how the entry it writes
// reaches mcpx (ServerFor).
type ServerOptions struct {
	// HTTP asks for a Streamable HTTP entry (--http) rather than the
	// stdio bridge `mcpx mcp`.
	HTTP bool
	// Broker is --broker as given: a socket, a URL or a tailnet name; ""
	// = the local daemon.
	Broker string
	// Tailnet says Broker is a tailnet name, reached at http://<name>
	// (the Go client's BrokerAddr decides).
	Tailnet bool
	// TSNet is --tsnet: the name is reached through an embedded tailnet
	// node, which only the bridge brings up.
	TSNet bool
	// TokenFile is --token-file, passed on to the bridge.
	TokenFile string
	// Token returns the bearer token of an HTTP entry (--token-file's,
	// else $MCPX_TOKEN; "" = none). It is called for an HTTP entry only.
	Token func() (string, error)
	// Daemon returns the running local daemon, for an HTTP entry with no
	// Broker; it is called for that entry only. Its error is that there
	// is no daemon record in StateDir, which messages name.
	Daemon func() (Daemon, error)
	// OwnerToken returns the owner token an HTTP entry of the local daemon
	// carries (package auth/owner: named, revocable, it survives the
	// daemon's restarts and upgrades); it is called for that entry only.
	OwnerToken func() (string, error)
	StateDir   string
}

// Daemon is the local daemon as its record says, for an HTTP entry.
type Daemon struct {
	Pid int
	// URL is its loopback base URL; "" = it serves none (--listen off).
	URL string
	// Socket is its unix socket, and Answers whether it answers there now.
	Socket  string
	Answers bool
}

// ServerFor returns how the MCP entry `mcpx install` writes reaches mcpx,
// and notes for the user:
//
//   - the stdio bridge `mcpx mcp` by default, with the broker flags passed
//     on (a socket and the token file made absolute: the client starts
//     the bridge in a directory of its own);
//   - with HTTP, the broker's /mcp endpoint and an Authorization header:
//     the running local daemon's loopback URL and an owner token of the
//     client's (OwnerToken), or Broker's URL or tailnet name with Token.
//     A socket, or a name reached through --tsnet, has no URL a client
//     could dial: an error says to leave out --http.
func ServerFor(o ServerOptions) (Server, []string, error) {
	if !o.HTTP {
		return bridge(o)
	}
	if o.TSNet {
		return Server{}, nil, errors.New("--http with --tsnet: an HTTP entry is dialled by the client itself, through this machine's tailscaled, not an embedded node; leave out --http for the stdio bridge, which brings up the node")
	}
	token, err := o.Token()
	if err != nil {
		return Server{}, nil, err
	}
	switch {
	case o.Broker == "":
		return localHTTP(o)
	case o.Tailnet: // WhoIs tells the broker who calls: no token needed
		return bearer(Server{URL: "http://" + o.Broker + "/mcp"}, token), nil, nil
	case strings.HasPrefix(o.Broker, "http://"), strings.HasPrefix(o.Broker, "https://"):
		return bearer(Server{URL: strings.TrimSuffix(o.Broker, "/") + "/mcp"}, token), nil, nil
	}
	return Server{}, nil, fmt.Errorf("--http needs the broker's URL or tailnet name; the socket %s is reached through the stdio bridge: leave out --http", o.Broker)
}

// bridge is the stdio bridge's entry: `mcpx mcp` with o's broker flags.
func bridge(o ServerOptions) (Server, []string, error) {
	args := []string{"mcp"}
	if addr := o.Broker; addr != "" {
		if !o.Tailnet && !strings.Contains(addr, "://") {
			// A socket: the client starts the bridge in a directory of its own.
			abs, err := filepath.Abs(addr)
			if err != nil {
				return Server{}, nil, err
			}
			addr = abs
		}
		args = append(args, "--broker", addr)
	}
	if o.TSNet {
		args = append(args, "--tsnet")
	}
	if o.TokenFile != "" {
		abs, err := filepath.Abs(o.TokenFile)
		if err != nil {
			return Server{}, nil, err
		}
		args = append(args, "--token-file", abs)
	}
	return Server{Args: args}, nil, nil
}

// localHTTP is the HTTP entry of the running local daemon.
func localHTTP(o ServerOptions) (Server, []string, error) {
	d, err := o.Daemon()
	switch {
	case err != nil:
		return Server{}, nil, fmt.Errorf("--http writes the running daemon's URL and token, and no daemon record is in %s (%v): start the daemon (`mcpx service install`, or any mcpx command starts one) and run this again", o.StateDir, err)
	case d.URL == "":
		return Server{}, nil, fmt.Errorf("the daemon (pid %d) serves no loopback TCP (it runs with --listen off): restart it with --listen 127.0.0.1:PORT, or leave out --http for the stdio bridge", d.Pid)
	case !d.Answers:
		return Server{}, nil, fmt.Errorf("the daemon of the record in %s (pid %d) does not answer on %s: start it and run this again", o.StateDir, d.Pid, d.Socket)
	}
	token, err := o.OwnerToken()
	if err != nil {
		return Server{}, nil, err
	}
	note := fmt.Sprintf("the entry holds an owner token of its own, which survives the daemon's restarts and upgrades (`mcpx token ls` shows it, `mcpx token revoke` ends it), and the daemon's URL %s: its port stays the same across restarts unless another program takes it (then install again, or give the daemon a fixed --listen 127.0.0.1:PORT); or leave out --http for the stdio bridge, which finds the daemon itself", d.URL)
	return bearer(Server{URL: d.URL + "/mcp"}, token), []string{note}, nil
}

// bearer is s with the Authorization header of token, if any.
func bearer(s Server, token string) Server {
	if token != "" {
		s.Headers = map[string]string{wire.HeaderAuthorization: "Bearer " + token}
	}
	return s
}

// goRunExe matches the binary `go run` builds: $GOTMPDIR (or $TMPDIR)
// /go-buildNNN/bNNN/exe/<name>, deleted when go run exits. (`go test`'s are
// bNNN/<name>.test, not under exe/.)
var goRunExe = regexp.MustCompile(`/go-build[0-9]+/b[0-9]+/exe/[^/]+$`)

// CheckBinary says why the binary at path must not be written into a unit
// or a hook, to run later: `go run`'s temporary build, which Go deletes
// when it exits. nil = it may.
func CheckBinary(path string) error {
	if goRunExe.MatchString(path) {
		return fmt.Errorf("this mcpx is `go run`'s temporary build (%s), which Go deletes when it exits: "+
			"`go install ./cmd/mcpx` (it goes to $(go env GOPATH)/bin) and run that mcpx, or give --binary", path)
	}
	return nil
}

// Executable is this program's binary, symlinks resolved, for a unit or a
// hook to run later. For an install (strict) it must pass CheckBinary.
func Executable(strict bool) (string, error) {
	bin, err := os.Executable()
	if err == nil {
		bin, err = filepath.EvalSymlinks(bin)
	}
	if err != nil {
		return "", fmt.Errorf("finding this binary: %w (give --binary)", err)
	}
	if strict {
		if err := CheckBinary(bin); err != nil {
			return "", err
		}
	}
	return bin, nil
}
