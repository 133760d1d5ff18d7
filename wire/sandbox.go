package wire

// InstanceSandbox is what confines an instance's children (docs/sandbox.md).
type InstanceSandbox struct {
	// Fingerprint is the policy's: part of the instance's identity, so
	// callers whose policies differ never share a child.
	Fingerprint string `json:"fingerprint"`
	// Why is "config" (the server's "sandbox"), "defaults" (the config's
	// defaults) or "caller" (the caller is not the daemon's owner).
	Why string `json:"why"`
	// Mode is "enforce" or "best-effort"; Network "none", "proxy" (a host
	// list, through the egress proxy), "loopback" or "all".
	Mode    string `json:"mode"`
	Network string `json:"network"`
	// Limit is the limit that ended the instance's last child ("limit:
	// memory 4GiB"); absent if none did.
	Limit string `json:"limit,omitempty"`
	// Enforcement is what confines the running child, feature by feature;
	// absent before its first start.
	Enforcement []SandboxFeature `json:"enforcement,omitempty"`
}

// SandboxFeature is one part of a confinement (filesystem, network, ipc,
// unix-sockets, user-namespace, capabilities, no-new-privs, memory,
// processes, open-files, cpu, core-dumps) and whether the kernel enforces
// it.
type SandboxFeature struct {
	Name string `json:"name"`
	// Needed: the policy asks for it; in enforce mode a child whose needed
	// feature is not enforced does not start.
	Needed   bool `json:"needed,omitempty"`
	Enforced bool `json:"enforced"`
	// By names what enforces it ("Landlock ABI 7", "memory cgroup v1");
	// Why says why it is not enforced, or what it leaves open.
	By  string `json:"by,omitempty"`
	Why string `json:"why,omitempty"`
}

// Sandbox is a server's effective sandbox for the calling caller at its
// cwd: what would confine the child that serves its calls
// (`mcpx sandbox show`). Read and Env are the daemon's owner's to see.
type Sandbox struct {
	Server string `json:"server"`
	Key    string `json:"key"`            // the scope key the caller's calls land on
	Root   string `json:"root,omitempty"` // the instance root; absent for a rootless scope
	// Confined is false when the child runs unconfined; nothing below is
	// set then.
	Confined    bool   `json:"confined"`
	Why         string `json:"why,omitempty"` // as InstanceSandbox.Why
	Fingerprint string `json:"fingerprint,omitempty"`
	Mode        string `json:"mode,omitempty"`
	// Read are what it may read; Write what it may also write
	// (${mcpx.tmpdir} names the instance's private directory).
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
	// Network is "none", "proxy", "loopback" or "all"; Allow the hosts
	// the egress proxy lets it reach (proxy); Ports those it may connect
	// to and bind (loopback, beside its allocations).
	Network string   `json:"network,omitempty"`
	Allow   []string `json:"allow,omitempty"`
	Ports   []int    `json:"ports,omitempty"`
	// Env are the names of its environment's variables: all it gets.
	Env    []string       `json:"env,omitempty"`
	Limits *SandboxLimits `json:"limits,omitempty"`
	// Enforcement is what this kernel would enforce, feature by feature;
	// Refused why it would refuse to start the child (enforce mode), absent
	// if it would not.
	Enforcement []SandboxFeature `json:"enforcement,omitempty"`
	Refused     string           `json:"refused,omitempty"`
}

// SandboxLimits bound a confined child and everything it starts; 0 (or
// an absent cpu) is no limit.
type SandboxLimits struct {
	Memory    int64  `json:"memory"`        // bytes, all its processes together
	Processes int    `json:"processes"`     // processes and threads at once
	OpenFiles int    `json:"openFiles"`     // per process
	CPU       string `json:"cpu,omitempty"` // CPU time per process, a duration ("10m0s")
}
