package deploy_test

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// installEnv is a clean user for install.sh: a temp HOME and XDG
// directories, PATH of bin (first) and the system's directories only, no
// systemd user manager (the service is written, its commands printed).
func installEnv(t *testing.T, home, bin string) []string {
	return []string{"HOME=" + home, "PATH=" + bin + ":/usr/bin:/bin", "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local/state"), "XDG_RUNTIME_DIR=" + filepath.Join(home, "run"),
		"MCPX_SERVICE_PLATFORM=linux", "MCPX_NO_AUTOSTART=1", proctest.Env(t)}
}

func runInstall(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	script := filepath.Join(testenv.RepoRoot(t), "install.sh")
	cmd := exec.Command("/bin/sh", append([]string{script}, args...)...)
	cmd.Env, cmd.Dir = env, t.TempDir()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestInstallScript: install.sh passes shellcheck; run as a new user with
// no network, it installs a release archive (checked against its
// .sha256) or runs go install, writes the user service naming the
// installed binary, and prints the next step; a corrupt archive, an
// unknown platform are refused, naming what is wrong.
func TestInstallScript(t *testing.T) {
	t.Parallel() // a go build and shell runs, nothing shared
	shellcheck := testenv.Program(t, "shellcheck", "apt-get install -y shellcheck")
	goBin := testenv.Program(t, "go", "see https://go.dev/doc/install")
	proctest.CheckNoLeaks(t) // install.sh and the mcpx it installs start nothing that outlives them
	root := testenv.RepoRoot(t)
	if out, err := exec.Command(shellcheck, "-s", "sh", filepath.Join(root, "install.sh")).CombinedOutput(); err != nil {
		t.Errorf("shellcheck install.sh: %v\n%s", err, out)
	}

	// A release archive of the real binary, with its checksum.
	dir := t.TempDir()
	mcpx := filepath.Join(dir, "build", "mcpx")
	// Built as TestStaticNonRoot builds it, so the two share the build cache.
	build := exec.Command(goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", mcpx, "./cmd/mcpx")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := testenv.GoBuild(build); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	archive := filepath.Join(dir, "mcpx_linux_amd64.tar.gz")
	writeArchive(t, archive, mcpx)
	sum := sha256.Sum256(must(os.ReadFile(archive)))
	testenv.WriteFile(t, archive+".sha256", hex.EncodeToString(sum[:])+"  mcpx_linux_amd64.tar.gz\n")

	home := filepath.Join(dir, "home")
	noGo := filepath.Join(dir, "nogo")
	os.MkdirAll(noGo, 0o755)
	out, err := runInstall(t, installEnv(t, home, noGo), "--archive", archive)
	if err != nil {
		t.Fatalf("install from the archive: %v\n%s", err, out)
	}
	installed := filepath.Join(home, ".local", "bin", "mcpx")
	if got, want := must(os.ReadFile(installed)), must(os.ReadFile(mcpx)); string(got) != string(want) {
		t.Errorf("%s is not the archive's binary", installed)
	}
	unit := string(must(os.ReadFile(filepath.Join(home, ".config", "systemd", "user", "mcpx.service"))))
	if !strings.Contains(unit, `ExecStart="`+installed+`" "serve"`) {
		t.Errorf("the unit does not run the installed binary:\n%s", unit)
	}
	for _, want := range []string{"sha256 checked", "installed " + installed, "not on your PATH", "next: " + installed + " status"} {
		if !strings.Contains(out, want) {
			t.Errorf("install output lacks %q:\n%s", want, out)
		}
	}

	// go install, when go is on PATH: the module at the version asked,
	// into the bin directory (go here stands in for the module proxy,
	// which is not reachable offline: it copies the binary built above).
	goDir := filepath.Join(dir, "gostub")
	testenv.WriteFiles(t, goDir, map[string]string{"go": "#!/bin/sh\necho \"$GOBIN $*\" > " + filepath.Join(dir, "go.args") + "\ncp " + mcpx + " \"$GOBIN/mcpx\"\n"})
	os.Chmod(filepath.Join(goDir, "go"), 0o755)
	home2 := filepath.Join(dir, "home2")
	out, err = runInstall(t, installEnv(t, home2, goDir), "--version", "v1.2.3", "--no-service")
	if err != nil {
		t.Fatalf("install with go: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(dir, "go.args"))))), filepath.Join(home2, ".local", "bin")+" install mcpx.dev/mcpx/cmd/mcpx@v1.2.3"; got != want {
		t.Errorf("go ran as %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(home2, ".config", "systemd", "user", "mcpx.service")); err == nil || !strings.Contains(out, "next: "+filepath.Join(home2, ".local", "bin", "mcpx")+" service install") {
		t.Errorf("--no-service: a unit was written (%v), or the next step is not the service:\n%s", err, out)
	}

	// A corrupt archive is not installed.
	testenv.WriteFile(t, archive+".sha256", strings.Repeat("0", 64)+"  mcpx_linux_amd64.tar.gz\n")
	home3 := filepath.Join(dir, "home3")
	if out, err := runInstall(t, installEnv(t, home3, noGo), "--archive", archive); err == nil || !strings.Contains(out, "not installed") {
		t.Errorf("an archive whose checksum does not match: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(home3, ".local", "bin", "mcpx")); err == nil {
		t.Error("the corrupt archive's binary was installed")
	}
	// Another platform is refused by name.
	testenv.WriteFiles(t, filepath.Join(dir, "sunos"), map[string]string{"uname": "#!/bin/sh\necho SunOS\n"})
	os.Chmod(filepath.Join(dir, "sunos", "uname"), 0o755)
	if out, err := runInstall(t, installEnv(t, home3, filepath.Join(dir, "sunos")), "--archive", archive); err == nil || !strings.Contains(out, "SunOS is not supported") {
		t.Errorf("on SunOS: %v\n%s", err, out)
	}
}

func writeArchive(t *testing.T, path, bin string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	data := must(os.ReadFile(bin))
	tw.WriteHeader(&tar.Header{Name: "mcpx_linux_amd64/mcpx", Mode: 0o755, Size: int64(len(data))})
	tw.Write(data)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
