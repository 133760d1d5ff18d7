package registry_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/deploy/registry"
	"mcpx.dev/mcpx/internal/testing/registrytest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// BenchmarkSpawn: a registry-installed npm server (node <bin>, what `mcpx
// registry add` writes) against `npx -y <pkg>@<version>` of the same
// package, both warm (installed; npm's cache filled by a first npx run):
// from the exec to the answer to initialize. For bench/README.md:
//
//	go test -run '^$' -bench Spawn -benchtime 20x ./registry
func BenchmarkSpawn(b *testing.B) {
	node := testenv.Node(b)
	npx, err := exec.LookPath("npx")
	if err != nil {
		testenv.Program(b, "npx", "install Node.js 20 or newer")
	}
	version := everythingVersion(b)
	srv := registrytest.New(b, everything(version))
	state := b.TempDir()
	if _, err := registry.Add(b.Context(), registry.AddOptions{Client: client(srv.URL),
		Name: "io.github.modelcontextprotocol/server-everything", Config: filepath.Join(b.TempDir(), "c.json"), StateDir: state}); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(registry.NPMDir(state, everythingPkg, version), "node_modules", everythingPkg, "dist", "index.js")
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"installed", []string{node, bin, "stdio"}},
		{"npx", []string{npx, "-y", everythingPkg + "@" + version, "stdio"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if err := initialize(tc.argv); err != nil { // warm: npm's cache, the page cache
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if err := initialize(tc.argv); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// initialize starts argv, sends initialize, waits for its answer, and
// kills the process group (npx's children too) and waits for it.
func initialize(argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) //nolint:errcheck // gone already is fine
		cmd.Wait()                                      //nolint:errcheck // killed
	}()
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}`+"\n") //nolint:errcheck // read below
	got := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if bytes.Contains(sc.Bytes(), []byte(`"id":1`)) {
				got <- nil
				return
			}
		}
		got <- errors.New("no answer to initialize")
	}()
	select {
	case err := <-got:
		if err != nil {
			return fmt.Errorf("%v: %s", err, stderr.String())
		}
		return nil
	case <-time.After(60 * time.Second):
		return fmt.Errorf("%s: no answer in 60s: %s", argv[0], stderr.String())
	}
}
