package client

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"mcpx.dev/mcpx/internal/paths"
)

// The laptop side: a client driving a broker on another machine (a
// sandbox on the tailnet). Its --broker may be a bare tailnet name, its
// working directory is mapped to the broker's side of the files, and it
// never starts the broker.

// tailnetName matches a bare tailnet host ("sandbox",
// "sandbox.example.ts.net", optionally with ":port").
var tailnetName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]{1,5})?$`)

// BrokerAddr turns a --broker value into New's address: an http(s) URL or a
// unix socket path stays as it is; a bare tailnet name ("sandbox",
// "sandbox.example.ts.net") becomes "http://name", with tailnet true. A
// socket path contains a slash (or ends in .sock), so "./mcpx.sock" is a
// socket and "sandbox" a name.
func BrokerAddr(s string) (addr string, tailnet bool) {
	switch {
	case strings.HasPrefix(s, "http://"), strings.HasPrefix(s, "https://"), strings.HasPrefix(s, "unix://"),
		strings.Contains(s, "/"), strings.HasSuffix(s, ".sock"), !tailnetName.MatchString(s):
		return s, false
	}
	return "http://" + s, true
}

// Remote reports whether the daemon is on another machine, as far as the
// address tells: an http(s) URL whose host is not loopback. A remote
// daemon is never started on demand, and a caller's cwd must be mapped to
// its side of the files.
func (c *Client) Remote() bool {
	if c.unix {
		return false
	}
	u, err := url.Parse(c.base)
	if err != nil {
		return true
	}
	host := u.Hostname()
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// Config is the client's own config file (DefaultClientConfig), read by
// the CLI:
//
//	{"pathMappings": {"/Users/me/src": "/home/me/src"}}
type Config struct {
	// PathMappings maps directories on this machine to the same files on
	// a remote broker's machine; see PathMap.
	PathMappings map[string]string `json:"pathMappings,omitempty"`
	// Runtime is the JavaScript runtime `mcpx run` uses when neither
	// --runtime nor $MCPX_RUNTIME names one: deno, bun, node, or a path to
	// one's binary.
	Runtime string `json:"runtime,omitempty"`
	// Remotes are brokers saved by name (`mcpx remote add`), reached with
	// --remote NAME or $MCPX_REMOTE, and DefaultRemote the one a command
	// naming no broker uses instead of the local daemon.
	Remotes       map[string]Remote `json:"remotes,omitempty"`
	DefaultRemote string            `json:"defaultRemote,omitempty"`
}

// Remote is a broker saved in the client config.
type Remote struct {
	// Broker is what --broker would be: a tailnet name, an http(s) URL
	// or a socket path.
	Broker string `json:"broker"`
	// TSNet reaches a tailnet Broker through the CLI's own tailnet node,
	// as --tsnet does.
	TSNet bool `json:"tsnet,omitempty"`
	// TokenFile holds its bearer token (the file's path, never the
	// token): used when neither --token-file nor $MCPX_TOKEN is given.
	TokenFile string `json:"tokenFile,omitempty"`
}

// LocalRemote is the remote name that means the local daemon: --remote
// local sets a default remote aside for one command.
const LocalRemote = "local"

// remoteName matches a remote's name.
var remoteName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// CheckRemoteName refuses a name a remote cannot have: empty, with
// characters other than letters, digits, '.', '_' and '-', or "local".
func CheckRemoteName(name string) error {
	if name == LocalRemote {
		return fmt.Errorf("remote name %q is taken: --remote local means the local daemon", name)
	}
	if !remoteName.MatchString(name) {
		return fmt.Errorf("remote name %q: use letters, digits, '.', '_' and '-', starting with a letter or digit", name)
	}
	return nil
}

// DefaultClientConfig is the client's config file, beside the daemon's
// default config (paths.DefaultConfig): $XDG_CONFIG_HOME/mcpx/client.json,
// else ~/.config/mcpx/client.json.
func DefaultClientConfig(getenv func(string) string) (string, error) {
	daemon, err := paths.DefaultConfig(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(daemon), "client.json"), nil
}

// LoadConfig reads the client config at path; a file that does not exist
// is the empty config. Unknown fields are errors naming the file.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Config{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the client config: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var cfg Config
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("client config %s: %w (want {\"pathMappings\": {\"/local/dir\": \"/broker/dir\"}, \"runtime\": \"bun\", \"remotes\": {\"sandbox\": {\"broker\": \"sandbox\", \"tsnet\": true}}})", path, err)
	}
	for name, r := range cfg.Remotes {
		if err := CheckRemoteName(name); err != nil {
			return nil, fmt.Errorf("client config %s: remotes: %w", path, err)
		}
		if r.Broker == "" {
			return nil, fmt.Errorf("client config %s: remote %q has no broker: set \"broker\" to a tailnet name, an http(s) URL or a socket path", path, name)
		}
	}
	if cfg.DefaultRemote != "" && cfg.Remotes[cfg.DefaultRemote].Broker == "" {
		return nil, fmt.Errorf("client config %s: defaultRemote %q names no remote in \"remotes\": add it (`mcpx remote add %s ...`) or drop defaultRemote", path, cfg.DefaultRemote, cfg.DefaultRemote)
	}
	return &cfg, nil
}

// SaveConfig writes cfg to path (mode 0600, its directory made 0700 if
// need be), replacing the file at once so a reader never sees half of it.
func SaveConfig(path string, cfg *Config) error {
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("writing the client config: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".client-*.json")
	if err != nil {
		return fmt.Errorf("writing the client config: %w", err)
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the client config %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the client config %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing the client config %s: %w", path, err)
	}
	return nil
}

// PathMap turns a directory on this machine into the same directory on the
// broker's machine. Build it with NewPathMap.
type PathMap struct {
	pairs []pathPair // longest local prefix first
}

type pathPair struct{ local, remote string }

// NewPathMap checks and canonicalises mappings (local directory -> broker
// directory): both sides absolute; the local side cleaned and, if it
// exists, with symlinks resolved, as Map canonicalises the cwd it maps.
func NewPathMap(mappings map[string]string) (PathMap, error) {
	var m PathMap
	for local, remote := range mappings {
		if !filepath.IsAbs(local) {
			return PathMap{}, fmt.Errorf("path mapping %q: the local directory must be absolute", local)
		}
		// The broker's side is a path on another machine: always slash-separated and absolute.
		if !strings.HasPrefix(remote, "/") {
			return PathMap{}, fmt.Errorf("path mapping %q: the broker's directory %q must be absolute", local, remote)
		}
		m.pairs = append(m.pairs, pathPair{local: canonical(local), remote: path.Clean(remote)})
	}
	slices.SortFunc(m.pairs, func(a, b pathPair) int {
		return cmp.Or(cmp.Compare(len(b.local), len(a.local)), cmp.Compare(a.local, b.local))
	})
	return m, nil
}

// Map returns the broker-side path of the local directory dir, canonicalised
// first (absolute, cleaned, symlinks resolved): the longest mapped prefix
// wins, matched on whole path elements ("/src" maps "/src/app", not
// "/srcx"). ok is false when no mapping covers dir.
func (m PathMap) Map(dir string) (string, bool) {
	dir = canonical(dir)
	for _, p := range m.pairs {
		rest, ok := under(dir, p.local)
		if !ok {
			continue
		}
		if rest == "" {
			return p.remote, true
		}
		return strings.TrimSuffix(p.remote, "/") + "/" + filepath.ToSlash(rest), true
	}
	return "", false
}

// under returns dir's path below prefix ("" for prefix itself).
func under(dir, prefix string) (string, bool) {
	if dir == prefix {
		return "", true
	}
	if prefix == string(filepath.Separator) {
		return strings.TrimPrefix(dir, prefix), true
	}
	rest, ok := strings.CutPrefix(dir, prefix+string(filepath.Separator))
	return rest, ok
}

// canonical is p absolute and cleaned, with symlinks resolved when it
// exists.
func canonical(p string) string {
	p = filepath.Clean(p)
	if c, err := filepath.EvalSymlinks(p); err == nil {
		return c
	}
	return p
}

// UnmappedError is a working directory no path mapping covers, for a
// remote broker, which cannot see this machine's files.
type UnmappedError struct {
	Dir    string // the local directory, canonical
	Config string // the client config file
}

func (e *UnmappedError) Error() string {
	return fmt.Sprintf("the broker is on another machine and no path mapping covers %s: pass --cwd with the directory on the broker's machine, or add a mapping to %s, e.g. {\"pathMappings\": {%q: \"/the/same/files/on/the/broker\"}}",
		e.Dir, e.Config, e.Dir)
}
