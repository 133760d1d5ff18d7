package wire

import "time"

// NixProgram is a resolved nix:<flakeref>[#attr] program spec: what runs,
// and the locked flake reference it was built from.
type NixProgram struct {
	Spec         string    `json:"spec"`          // the cache key: the spec with relative paths made absolute
	Path         string    `json:"path"`          // <storePath>/bin/<name>: what is exec'd
	StorePath    string    `json:"storePath"`     // the package's output in the Nix store
	LockedURL    string    `json:"lockedUrl"`     // the locked URL nix built from
	Rev          string    `json:"rev,omitempty"` // the git revision; absent for path: refs and dirty trees
	NarHash      string    `json:"narHash,omitempty"`
	LastModified int64     `json:"lastModified,omitempty"` // unix seconds, as nix reports it
	Root         string    `json:"root"`                   // the GC root keeping the store path alive
	ResolvedAt   time.Time `json:"resolvedAt"`
	// Pinned: the spec names a revision or narHash (github:o/r/<40 hex>,
	// ?rev=, ?narHash=), so no refresh can change what it runs.
	Pinned bool `json:"pinned"`
}

// NixEnvironment is a captured nix execution environment (a flake's
// devShell, a shell.nix): what a server's child runs under.
type NixEnvironment struct {
	Environment  string    `json:"environment"`         // the cache key: as configured, with a relative path made absolute
	LockedURL    string    `json:"lockedUrl,omitempty"` // flake: the locked URL nix evaluated
	Rev          string    `json:"rev,omitempty"`
	NarHash      string    `json:"narHash,omitempty"`
	LastModified int64     `json:"lastModified,omitempty"`
	FileHash     string    `json:"fileHash,omitempty"` // shell: the sha256 of the shell.nix captured
	Variables    int       `json:"variables"`          // how many variables it sets (their values are not listed)
	Root         string    `json:"root"`               // the GC root keeping its inputs alive
	CapturedAt   time.Time `json:"capturedAt"`
}

// NixServer is a configured server whose command is a nix: spec, or whose
// environment is a nix one (flake:, shell:), or both.
type NixServer struct {
	Server  string      `json:"server"`
	Spec    string      `json:"spec,omitempty"` // the command as configured, if it is a nix: spec
	Pinned  bool        `json:"pinned"`
	Program *NixProgram `json:"program,omitempty"` // absent until first resolved (its first spawn)
	// Environment is the environment as configured, if it is a nix one;
	// Env what it captured, absent until its first spawn.
	Environment string          `json:"environment,omitempty"`
	Env         *NixEnvironment `json:"env,omitempty"`
}

// NixList is the answer of GET /v1/nix: the servers whose command is a
// nix: spec or whose environment is a nix one, and the cache entries and
// environments no server references now (what POST /v1/nix/gc would drop).
type NixList struct {
	Servers                  []NixServer      `json:"servers"`
	Unreferenced             []NixProgram     `json:"unreferenced"`
	UnreferencedEnvironments []NixEnvironment `json:"unreferencedEnvironments"`
}

// NixRefreshed is the answer of POST /v1/nix/refresh/{server}.
type NixRefreshed struct {
	Server   string      `json:"server"`
	Previous *NixProgram `json:"previous,omitempty"` // absent if the spec had not been resolved
	Current  NixProgram  `json:"current"`
	// Changed: the program is another path now; the instances of the
	// servers in Replaced (every server with this spec) are drained and
	// replaced, so their next calls run it.
	Changed  bool     `json:"changed"`
	Replaced []string `json:"replaced,omitempty"`
	// Environment is the server's nix execution environment (flake:,
	// shell:), captured again too; EnvironmentChanged: its variables
	// changed, and Replaced includes every server using it. Current is
	// zero for a server whose command is not a nix: spec.
	Environment        string `json:"environment,omitempty"`
	EnvironmentChanged bool   `json:"environmentChanged,omitempty"`
}

// NixGC is the answer of POST /v1/nix/gc: the cache entries dropped, with
// their GC roots; `nix store gc` may then free their store paths.
type NixGC struct {
	Dropped []NixProgram `json:"dropped"`
}
