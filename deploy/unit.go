package deploy

import (
	"bytes"
	"embed"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"text/template"
)

// Platform names a service manager: systemd user units on Linux, launchd
// agents on macOS. Its values are runtime.GOOS values.
type Platform string

// The platforms mcpx installs a service on.
const (
	Linux  Platform = "linux"
	Darwin Platform = "darwin"
)

// ParsePlatform returns the platform called name (a runtime.GOOS value).
func ParsePlatform(name string) (Platform, error) {
	switch p := Platform(name); p {
	case Linux, Darwin:
		return p, nil
	}
	return "", fmt.Errorf("no user service manager mcpx knows on %q: it installs systemd user units (linux) and launchd agents (darwin); run `mcpx serve` under your own supervisor", name)
}

// Label is the launchd label of the agent, and UnitName the systemd unit.
const (
	Label    = "dev.mcpx.serve"
	UnitName = "mcpx.service"
)

// Service is what a service definition runs: `<Binary> serve` with these
// settings. Every path is absolute.
type Service struct {
	Binary   string   // the mcpx binary
	StateDir string   // --state-dir
	Config   string   // --config; "" = the daemon's default
	Tailnet  *Tailnet // nil = no tailnet node
	// Path is put before the platform's default PATH in the service's
	// environment (a service manager's PATH is minimal: the directories of
	// node, npx, uvx or nix go here). Empty = the default PATH.
	Path []string
	// Writable are the paths the broker's children may write besides the
	// state directory (systemd's ProtectSystem=strict makes everything else
	// read-only). Typically the home directory: children are the user's own
	// tools working in the user's projects.
	Writable []string
}

// Tailnet is the embedded tailnet node's settings (`mcpx serve --tailnet`).
type Tailnet struct {
	Hostname    string // --tailnet-hostname; "" = the daemon's default
	AuthKeyFile string // --tailnet-authkey-file; "" = none (the login URL is logged)
	Tags        string // --tailnet-tags, comma-separated; "" = none
}

// Args returns the service's command line, the binary first.
func (s Service) Args() []string {
	args := []string{s.Binary, "serve", "--state-dir", s.StateDir}
	if s.Config != "" {
		args = append(args, "--config", s.Config)
	}
	if t := s.Tailnet; t != nil {
		args = append(args, "--tailnet")
		if t.Hostname != "" {
			args = append(args, "--tailnet-hostname", t.Hostname)
		}
		if t.AuthKeyFile != "" {
			args = append(args, "--tailnet-authkey-file", t.AuthKeyFile)
		}
		if t.Tags != "" {
			args = append(args, "--tailnet-tags", t.Tags)
		}
	}
	return args
}

// check rejects what a unit file cannot hold safely: relative paths and
// control characters (a newline would end a systemd directive).
func (s Service) check() error {
	paths := map[string]string{"binary": s.Binary, "state dir": s.StateDir, "config": s.Config}
	if s.Tailnet != nil {
		paths["tailnet auth-key file"] = s.Tailnet.AuthKeyFile
	}
	for i, p := range s.Path {
		paths[fmt.Sprintf("path[%d]", i)] = p
	}
	for i, p := range s.Writable {
		paths[fmt.Sprintf("writable[%d]", i)] = p
	}
	for what, p := range paths {
		if p == "" && (what == "config" || strings.HasPrefix(what, "tailnet")) {
			continue
		}
		if !filepath.IsAbs(p) {
			return fmt.Errorf("the service's %s %q is not an absolute path", what, p)
		}
	}
	for _, a := range s.Args() {
		if strings.ContainsAny(a, "\x00\r\n") {
			return fmt.Errorf("the service's argument %q holds a control character", a)
		}
	}
	for _, p := range s.Path {
		if strings.Contains(p, ":") {
			return fmt.Errorf("the service's PATH entry %q holds a colon", p)
		}
	}
	return nil
}

// DefaultPath is the PATH a service gets after Service.Path.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

func (s Service) path() string {
	if len(s.Path) == 0 {
		return ""
	}
	return strings.Join(append(s.Path[:len(s.Path):len(s.Path)], DefaultPath), ":")
}

// File is a file to install: where, what and with which permissions.
type File struct {
	Path    string
	Content []byte
}

// ServiceFile returns where the service definition of p lives for the user
// whose home is home: ~/.config/systemd/user/mcpx.service (configHome is
// $XDG_CONFIG_HOME, "" = ~/.config) or ~/Library/LaunchAgents/<Label>.plist.
func ServiceFile(p Platform, home, configHome string) string {
	if p == Darwin {
		return filepath.Join(home, "Library", "LaunchAgents", Label+".plist")
	}
	if configHome == "" {
		configHome = filepath.Join(home, ".config")
	}
	return filepath.Join(configHome, "systemd", "user", UnitName)
}

// LogFile is where the launchd agent's output goes (systemd: the journal).
func LogFile(s Service) string { return filepath.Join(s.StateDir, "service.log") }

//go:embed templates
var templates embed.FS

// tmpl is parsed on first use, so a process that renders no service
// definition (the sandbox's helper, most commands) does not pay for it.
var tmpl = sync.OnceValue(func() *template.Template { return template.Must(template.ParseFS(templates, "templates/*")) })

// Render returns the service definition of s for platform p, to be written
// at path.
func Render(p Platform, path string, s Service) (File, error) {
	if err := s.check(); err != nil {
		return File{}, err
	}
	var buf bytes.Buffer
	var err error
	switch p {
	case Linux:
		err = tmpl().ExecuteTemplate(&buf, "mcpx.service", systemdData(s))
	case Darwin:
		err = tmpl().ExecuteTemplate(&buf, "mcpx.plist", launchdData(s))
	default:
		_, err = ParsePlatform(string(p))
	}
	if err != nil {
		return File{}, err
	}
	return File{Path: path, Content: buf.Bytes()}, nil
}

type systemdUnit struct {
	ExecStart      string
	Environment    []string
	ReadWritePaths string
}

func systemdData(s Service) systemdUnit {
	var exec []string
	for _, a := range s.Args() {
		exec = append(exec, systemdQuote(a, true))
	}
	u := systemdUnit{ExecStart: strings.Join(exec, " ")}
	if p := s.path(); p != "" {
		u.Environment = append(u.Environment, systemdQuote("PATH="+p, false))
	}
	rw := []string{systemdQuote(s.StateDir, false)}
	for _, w := range s.Writable {
		rw = append(rw, systemdQuote(w, false))
	}
	u.ReadWritePaths = strings.Join(rw, " ")
	return u
}

// systemdQuote quotes one word of a unit directive (systemd.syntax(7),
// systemd.service(5) "Command lines"): double quotes with \ and " escaped, %
// doubled (specifiers) and, in a command line, $ doubled (variable
// expansion happens only there).
func systemdQuote(s string, command bool) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `%`, `%%`)
	if command {
		r = strings.NewReplacer(`\`, `\\`, `"`, `\"`, `%`, `%%`, `$`, `$$`)
	}
	return `"` + r.Replace(s) + `"`
}

type launchdAgent struct {
	Label       string
	Args        []string
	Environment []keyValue
	Log         string
}

type keyValue struct{ Key, Value string }

func launchdData(s Service) launchdAgent {
	a := launchdAgent{Label: Label, Log: xmlText(LogFile(s))}
	for _, arg := range s.Args() {
		a.Args = append(a.Args, xmlText(arg))
	}
	if p := s.path(); p != "" {
		a.Environment = append(a.Environment, keyValue{"PATH", xmlText(p)})
	}
	return a
}

func xmlText(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) //nolint:errcheck // a strings.Builder never fails
	return b.String()
}

// ServicePart is the service definition of s for platform p at path, as a
// part to install.
func ServicePart(p Platform, path string, s Service) (Part, error) {
	f, err := Render(p, path, s)
	if err != nil {
		return Part{}, err
	}
	return Part{Path: f.Path, Want: string(f.Content), Mode: 0o644}, nil
}
