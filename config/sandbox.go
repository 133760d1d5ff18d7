package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/internal/hostlist"
	"mcpx.dev/mcpx/internal/placeholder"
)

// Sandbox is a command server's "sandbox" setting, or the defaults' (see
// docs/sandbox.md): whether the kernel confines its children, and to what.
// In JSON it is true (confined, with the defaults), false (Off), the string
// "best-effort" (confined with what the kernel can enforce), or an object
// of the fields below; an object means confined too. Fields left out take
// the defaults' (Defaults.Sandbox), then the built-in ones; the read and
// write lists of both add up.
//
// Paths are absolute, or begin with ${mcpx.root} (the instance root;
// dropped for scopes that have none) or ${mcpx.tmpdir} (the instance's
// private directory). Who gets a confined child, whatever the setting, is
// the broker's rule: every caller who is not the daemon's owner.
type Sandbox struct {
	// Off: "sandbox": false. The owner's calls get an unconfined child.
	Off bool `json:"-"`
	// Mode is "enforce" ("" too: a child whose policy this kernel cannot
	// enforce does not start) or "best-effort".
	Mode string `json:"mode,omitempty"`
	// Read are files and directories the child may read (and execute),
	// beside what it needs to run; Write those it may also write.
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
	// Network is what the child may reach; the zero value is unset (then
	// the defaults', else none).
	Network Network `json:"network,omitzero"`
	// Ports are TCP ports the child may connect to and bind under network
	// "loopback", beside its own allocations (${mcpx.alloc.*}).
	Ports []int `json:"ports,omitempty"`
	// Limits bound the child and everything it starts.
	Limits SandboxLimits `json:"limits,omitzero"`
}

// Sandbox modes.
const (
	SandboxEnforce    = "enforce"
	SandboxBestEffort = "best-effort"
)

// SandboxModes are the values of Sandbox.Mode.
var SandboxModes = []string{SandboxEnforce, SandboxBestEffort}

// On reports whether s asks for a confined child: it is set and not false.
func (s *Sandbox) On() bool { return s != nil && !s.Off }

// plain reports whether s says no more than on or off (and the mode).
func (s *Sandbox) plain() bool {
	return len(s.Read) == 0 && len(s.Write) == 0 && s.Network.IsZero() && len(s.Ports) == 0 && s.Limits.IsZero()
}

// MarshalJSON writes false, true, "best-effort" or the object.
func (s Sandbox) MarshalJSON() ([]byte, error) {
	switch {
	case s.Off:
		return []byte("false"), nil
	case s.plain() && s.Mode == "":
		return []byte("true"), nil
	case s.plain() && s.Mode == SandboxBestEffort:
		return json.Marshal(SandboxBestEffort)
	}
	type object Sandbox
	return json.Marshal(object(s))
}

// UnmarshalJSON reads what MarshalJSON writes. Parse checks the fields
// further (decodeSandbox, checkSandbox).
func (s *Sandbox) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "true":
		*s = Sandbox{}
		return nil
	case string(b) == "false":
		*s = Sandbox{Off: true}
		return nil
	case len(b) > 0 && b[0] == '"':
		var mode string
		if err := json.Unmarshal(b, &mode); err != nil || mode != SandboxBestEffort {
			return errors.New(sandboxWant)
		}
		*s = Sandbox{Mode: mode}
		return nil
	}
	type object Sandbox
	var o object
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return fmt.Errorf("%s: %v", sandboxWant, err)
	}
	*s = Sandbox(o)
	return nil
}

const sandboxWant = `want true, false, "best-effort" or an object such as {"network": ["api.github.com"], "limits": {"memory": "2GiB"}}`

// Network is a sandbox's "network": "none", "loopback", "all", or a list
// of hosts reached through the daemon's egress proxy (Kind NetworkHosts;
// the grammar is package hostlist's: "api.github.com", "*.npmjs.org",
// "registry.local:4873").
type Network struct {
	Kind  string   // "" (unset), or one of NetworkKinds
	Hosts []string // Kind NetworkHosts
}

// Network kinds.
const (
	NetworkNone     = "none"
	NetworkLoopback = "loopback"
	NetworkAll      = "all"
	NetworkHosts    = "hosts" // a list of hosts, through the egress proxy
)

// NetworkKinds are the strings "network" may be.
var NetworkKinds = []string{NetworkNone, NetworkLoopback, NetworkAll}

// IsZero reports whether n is unset.
func (n Network) IsZero() bool { return n.Kind == "" }

// MarshalJSON writes the kind, or the list of hosts.
func (n Network) MarshalJSON() ([]byte, error) {
	if n.Kind == NetworkHosts {
		return json.Marshal(n.Hosts)
	}
	return json.Marshal(n.Kind)
}

// UnmarshalJSON reads a kind or a list of hosts; checkSandbox checks them.
func (n *Network) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var hosts []string
		if err := json.Unmarshal(b, &hosts); err != nil {
			return errors.New(networkWant)
		}
		*n = Network{Kind: NetworkHosts, Hosts: hosts}
		return nil
	}
	var kind string
	if err := json.Unmarshal(b, &kind); err != nil {
		return errors.New(networkWant)
	}
	*n = Network{Kind: kind}
	return nil
}

const networkWant = `want "none", "loopback", "all" or a list of hosts such as ["api.github.com", "*.npmjs.org"]`

// SandboxLimits bound a confined child and everything it starts. A field
// left out (nil) takes the defaults' limit, then the built-in one (see
// docs/sandbox.md); 0 is no limit.
type SandboxLimits struct {
	// Memory is the most memory all the child's processes may use
	// together: "2GiB", "512MiB".
	Memory *ByteSize `json:"memory,omitempty"`
	// Processes is the most processes and threads at once.
	Processes *int `json:"processes,omitempty"`
	// OpenFiles is each process's most open files.
	OpenFiles *int `json:"openFiles,omitempty"`
	// CPU is each process's most CPU time ("10m"); a server that runs
	// for days uses CPU time all along, so there is none by default.
	CPU *Duration `json:"cpu,omitempty"`
}

// IsZero reports whether l sets no limit.
func (l SandboxLimits) IsZero() bool {
	return l.Memory == nil && l.Processes == nil && l.OpenFiles == nil && l.CPU == nil
}

// ByteSize is an amount of memory: in JSON a string of a number and a
// binary unit ("2GiB", "512MiB", "64KiB"), or a number of bytes.
type ByteSize int64

var byteUnits = []struct {
	name string
	size int64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

// String is b in the largest binary unit that divides it ("2GiB").
func (b ByteSize) String() string {
	for _, u := range byteUnits {
		if b >= ByteSize(u.size) && int64(b)%u.size == 0 {
			return strconv.FormatInt(int64(b)/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// MarshalJSON writes b as String does.
func (b ByteSize) MarshalJSON() ([]byte, error) { return json.Marshal(b.String()) }

// UnmarshalJSON reads "2GiB" or a number of bytes.
func (b *ByteSize) UnmarshalJSON(data []byte) error {
	var n int64
	if err := json.Unmarshal(data, &n); err == nil {
		if n < 0 {
			return fmt.Errorf("%d is negative: %s", n, byteSizeWant)
		}
		*b = ByteSize(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return errors.New(byteSizeWant)
	}
	v, err := ParseByteSize(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

const byteSizeWant = `want a size such as "2GiB" or "512MiB" (binary units: KiB, MiB, GiB, TiB), or 0 for no limit`

// ParseByteSize reads "2GiB", "512MiB", "1.5GiB", "4096" (bytes).
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	for _, u := range byteUnits {
		num, ok := strings.CutSuffix(t, u.name)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || f < 0 {
			break
		}
		return ByteSize(f * float64(u.size)), nil
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil && n >= 0 {
		return ByteSize(n), nil
	}
	hint := byteSizeWant
	for _, u := range []string{"T", "G", "M", "K", "t", "g", "m", "k"} {
		if num, ok := strings.CutSuffix(strings.TrimSuffix(t, "B"), u); ok && num != "" {
			hint = fmt.Sprintf("did you mean %q? %s", num+strings.ToUpper(u)+"iB", byteSizeWant)
			break
		}
	}
	return 0, fmt.Errorf("invalid size %q: %s", s, hint)
}

// Defaults are settings every server of the config takes unless it sets
// its own.
type Defaults struct {
	// Sandbox is every command server's "sandbox" unless it sets one:
	// "defaults": {"sandbox": true} confines them all.
	Sandbox *Sandbox `json:"sandbox,omitempty"`
}

// IsZero reports whether d sets nothing.
func (d Defaults) IsZero() bool { return d.Sandbox == nil }

// sandboxFields are where the keys of a sandbox object decode to.
func sandboxFields(s *Sandbox, limits *json.RawMessage) map[string]fieldSpec {
	return map[string]fieldSpec{
		"mode":    {&s.Mode, `"enforce" or "best-effort"`},
		"read":    {&s.Read, "an array of absolute paths"},
		"write":   {&s.Write, "an array of absolute paths"},
		"network": {&s.Network, networkWant[5:]},
		"ports":   {&s.Ports, "an array of TCP port numbers"},
		"limits":  {limits, `an object such as {"memory": "2GiB", "processes": 256}`},
	}
}

func sandboxLimitFields(l *SandboxLimits) map[string]fieldSpec {
	return map[string]fieldSpec{
		"memory":    {&l.Memory, `a size such as "2GiB"`},
		"processes": {&l.Processes, "a non-negative integer"},
		"openFiles": {&l.OpenFiles, "a non-negative integer"},
		"cpu":       {&l.CPU, `a duration such as "10m"`},
	}
}

// decodeSandbox reads a "sandbox" value at field (a server's "sandbox", or
// "defaults.sandbox"): true, false, "best-effort" or an object, its keys
// checked one by one (unknown keys named with a did-you-mean).
func (p *problems) decodeSandbox(server, field string, raw json.RawMessage) *Sandbox {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		var s Sandbox
		if err := json.Unmarshal(raw, &s); err != nil {
			hint := ""
			var str string
			if json.Unmarshal(raw, &str) == nil {
				hint = hintFor(str, []string{SandboxBestEffort}, "strings")
			}
			p.add(server, field, fmt.Sprintf("%s, got %s", sandboxWant, clip(string(raw), 30)), hint)
			return nil
		}
		return &s
	}
	members, _ := objectMembers(raw)
	s := new(Sandbox)
	var limits json.RawMessage
	p.decodeFields(server, field+".", members, sandboxFields(s, &limits), map[string]bool{})
	if limits != nil && !isNull(limits) {
		lm, err := objectMembers(limits)
		if err != nil {
			p.add(server, field+".limits", "want an object, got "+clip(string(limits), 20), `such as {"memory": "2GiB", "processes": 256}`)
		} else {
			p.decodeFields(server, field+".limits.", lm, sandboxLimitFields(&s.Limits), map[string]bool{})
		}
	}
	return s
}

// decodeDefaults reads the top-level "defaults".
func (p *problems) decodeDefaults(d *Defaults, raw json.RawMessage) {
	if isNull(raw) {
		return
	}
	members, err := objectMembers(raw)
	if err != nil {
		p.add("", "defaults", "defaults must be an object", `such as {"sandbox": true}`)
		return
	}
	var sb json.RawMessage
	p.decodeFields("", "defaults.", members, map[string]fieldSpec{"sandbox": {&sb, sandboxWant[5:]}}, map[string]bool{})
	if sb != nil {
		d.Sandbox = p.decodeSandbox("", "defaults.sandbox", sb)
	}
}

// checkSandbox checks a decoded "sandbox" value at field.
func (p *problems) checkSandbox(server, field string, s *Sandbox) {
	if s == nil {
		return
	}
	if s.Mode != "" && !slices.Contains(SandboxModes, s.Mode) {
		p.add(server, field+".mode", fmt.Sprintf("unknown mode %q", s.Mode), hintFor(s.Mode, SandboxModes, "modes"))
	}
	for _, set := range []struct {
		name  string
		paths []string
	}{{"read", s.Read}, {"write", s.Write}} {
		for i, path := range set.paths {
			if why := sandboxPathProblem(path); why != "" {
				p.add(server, fmt.Sprintf("%s.%s[%d]", field, set.name, i), fmt.Sprintf("%q %s", path, why),
					"use an absolute path, or one under ${mcpx.root} or ${mcpx.tmpdir}")
			}
		}
	}
	p.checkNetwork(server, field+".network", s.Network)
	for i, port := range s.Ports {
		if port < 1 || port > 65535 {
			p.add(server, fmt.Sprintf("%s.ports[%d]", field, i), fmt.Sprintf("port %d is not from 1 to 65535", port), "")
		}
	}
	if len(s.Ports) > 0 && s.Network.Kind != "" && s.Network.Kind != NetworkLoopback {
		p.add(server, field+".ports", "ports apply to network \"loopback\" only",
			`set "network": "loopback", or remove the ports (a host list names its ports as "host:port")`)
	}
	for name, v := range map[string]*int{"processes": s.Limits.Processes, "openFiles": s.Limits.OpenFiles} {
		if v != nil && *v < 0 {
			p.add(server, field+".limits."+name, fmt.Sprintf("%s is %d", name, *v), "use 0 for no limit, or a positive number")
		}
	}
	if c := s.Limits.CPU; c != nil && *c < 0 {
		p.add(server, field+".limits.cpu", fmt.Sprintf("cpu is %s", c), `use "0s" for no limit, or a duration such as "10m"`)
	}
}

func (p *problems) checkNetwork(server, field string, n Network) {
	switch n.Kind {
	case "", NetworkNone, NetworkLoopback, NetworkAll:
	case NetworkHosts:
		if len(n.Hosts) == 0 {
			p.add(server, field, "an empty host list reaches nothing", `use "none", or name the hosts such as ["api.github.com"]`)
			return
		}
		if _, err := hostlist.Parse(n.Hosts); err != nil {
			for _, e := range unjoin(err) {
				p.add(server, field, strings.Replace(e.Error(), "allow[", "network[", 1), "")
			}
		}
	default:
		p.add(server, field, fmt.Sprintf("unknown network %q", n.Kind), hintFor(n.Kind, NetworkKinds, "networks")+`; or name the hosts, such as ["api.github.com"]`)
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// sandboxPathProblem says what is wrong with a sandbox path, "" if
// nothing: it must be absolute, or begin with ${mcpx.root} or
// ${mcpx.tmpdir}, and name no other placeholder.
func sandboxPathProblem(path string) string {
	rest := path
	for _, pre := range []string{placeholder.Root, placeholder.TmpDir} {
		if r, ok := strings.CutPrefix(path, pre); ok {
			if r != "" && !strings.HasPrefix(r, "/") {
				return "must have a / after " + pre
			}
			rest = "/" + strings.TrimPrefix(r, "/")
		}
	}
	for r := range placeholder.Refs(rest) {
		return "holds " + r.Text + ": only ${mcpx.root} and ${mcpx.tmpdir} may begin a sandbox path"
	}
	if !filepath.IsAbs(rest) {
		return "is not absolute"
	}
	return ""
}

// checkSandboxes checks what the servers' "sandbox" and the defaults' mean
// together: a server confined by its own setting or the defaults'
// inherits none of the daemon's environment (inheritEnv) and runs no
// nix environment; a url server has no child to confine, nor an OpenAPI
// adapter a process (a CLI adapter's commands are confined).
func (p *problems) checkSandboxes(cfg *Config) {
	p.checkSandbox("", "defaults.sandbox", cfg.Defaults.Sandbox)
	for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
		s := cfg.Servers[name]
		if s == nil {
			continue
		}
		p.checkSandbox(name, "sandbox", s.Sandbox)
		own := s.Sandbox.On()
		if !own && (s.Sandbox != nil || !cfg.Defaults.Sandbox.On()) {
			continue
		}
		where := `"sandbox"`
		if !own {
			where = `"defaults": {"sandbox": ...}`
		}
		switch {
		case s.URL != "":
			if own {
				p.add(name, "sandbox", "a url server has no child of mcpx's to confine", `remove "sandbox"; confine the server where it runs`)
			}
		case s.OpenAPI != nil:
			if own {
				p.add(name, "sandbox", "an OpenAPI adapter starts no process to confine: its requests go from the daemon to its document's server", `remove "sandbox"`)
			}
		case !s.InheritEnv.IsZero():
			p.add(name, "inheritEnv", "a confined child inherits nothing of the daemon's environment, and "+where+" confines this server",
				`set the variables it needs in "env", or give the server "sandbox": false`)
		case s.Environment != "" && s.Environment != "host":
			p.add(name, "environment", "a confined child cannot run in a nix environment yet, and "+where+" confines this server",
				`use "environment": "host", or give the server "sandbox": false`)
		}
	}
}
