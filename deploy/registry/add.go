package registry

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"regexp"
	"strings"

	"mcpx.dev/mcpx/internal/launcher"
	"mcpx.dev/mcpx/internal/orderedjson"
)

// AddOptions say what Add adds, and where.
type AddOptions struct {
	Client  *Client
	Name    string // the registry's name of the server, io.github.owner/name
	Version string // "" = the latest
	As      string // the entry's name; "" = the name's last segment
	// Use picks what of the server.json runs: a registryType (npm, pypi,
	// oci, nuget, nix) or "remote"; "" = the first mcpx can run, packages
	// first.
	Use      string
	Config   string // the config file written
	StateDir string // npm packages go below it (NPMDir)
	// Values are the inputs by name (--env K=V); see the package doc.
	Values map[string]string
	// Prompt asks for a required input with none in Values; nil = there is
	// no one to ask (an error names what is missing). A secret must not
	// be echoed.
	Prompt func(Variable) (string, error)
	Force  bool      // replace an entry of the same name
	NPM    string    // the npm command; "" = "npm"
	Log    io.Writer // npm's output; nil = discarded
	// LookPath finds a launcher on PATH for the warning that it is
	// missing; nil = exec.LookPath.
	LookPath func(string) (string, error)
}

// AddResult is what Add wrote.
type AddResult struct {
	Name      string              // the entry's name
	Config    string              // the file
	Server    *ServerResponse     // the version added
	Kind      string              // what runs: a registryType, or KindRemote
	Entry     *orderedjson.Object // as written
	Installed bool                // npm ran (false: the package was installed already, or not npm)
	Warnings  []string            // the launcher missing here, a deprecated version
}

// localName is a config server name: [A-Za-z0-9_-]+.
var localName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Add writes the entry of a registry server into a config file: see the
// package doc.
func Add(ctx context.Context, o AddOptions) (*AddResult, error) {
	name := o.As
	if name == "" {
		name = regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(o.Name[strings.LastIndex(o.Name, "/")+1:], "-")
	}
	if !localName.MatchString(name) {
		return nil, fmt.Errorf("%q is not a server name for the config: use letters, digits, - and _ (--as NAME)", name)
	}
	if o.Version == "latest" {
		o.Version = "" // the latest, pinned to what it is now
	}
	srv, err := o.Client.Get(ctx, o.Name, o.Version)
	if err != nil {
		return nil, err
	}
	s := &srv.Server
	res := &AddResult{Name: name, Config: o.Config, Server: srv}
	switch srv.Status() {
	case "deleted":
		return nil, fmt.Errorf("%s@%s is deleted from the registry: %s", s.Name, s.Version, cmp.Or(srv.Meta.Official.StatusMessage, "pick another version (mcpx registry show --versions)"))
	case "deprecated":
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s@%s is deprecated: %s", s.Name, s.Version, cmp.Or(srv.Meta.Official.StatusMessage, "the registry gives no reason")))
	}
	c, err := choose(s, o.Use)
	if err != nil {
		return nil, err
	}
	res.Kind = c.kind
	vs := &values{given: maps.Clone(o.Values), ask: o.Prompt, used: map[string]bool{}}
	if vs.given == nil {
		vs.given = map[string]string{}
	}
	// Every input is resolved (and asked for) before anything is
	// installed, so a missing one costs no download.
	if _, err := build(s, c, "", vs); err != nil {
		return nil, err
	}
	if err := vs.check(s.Name); err != nil {
		return nil, err
	}
	program := ""
	if c.kind == KindNPM {
		log := o.Log
		if log == nil {
			log = io.Discard
		}
		program, res.Installed, err = installNPM(ctx, cmp.Or(o.NPM, "npm"), o.StateDir, c.pkg, log)
		if err != nil {
			return nil, err
		}
	}
	// The second pass asks no one again: the answers are in vs.given.
	entry, err := build(s, c, program, vs)
	if err != nil {
		return nil, err
	}
	if err := writeEntry(o.Config, name, entry, o.Force, vs.secret); err != nil {
		return nil, err
	}
	res.Entry = entry
	lookPath := o.LookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	if w := launcherMissing(c.kind, lookPath); w != "" {
		res.Warnings = append(res.Warnings, w)
	}
	return res, nil
}

// launcherMissing warns when the launcher kind's entry runs is not on
// PATH here (the daemon's PATH may differ).
func launcherMissing(kind string, lookPath func(string) (string, error)) string {
	l := launchers[kind]
	if l == "" {
		return ""
	}
	if _, err := lookPath(l); err == nil {
		return ""
	}
	return fmt.Sprintf("%s is not on PATH here: %s; the server will not start until the daemon finds it", l, launcher.Hint(l))
}
