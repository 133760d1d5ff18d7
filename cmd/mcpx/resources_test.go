package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
	"mcpx.dev/mcpx/wire"
)

// serveServers runs `mcpx serve` in this process with servers (the
// "servers" object of a config) and returns its socket; the daemon stops
// at the test's end. The servers "everything" (server-everything, pinned)
// and "demo" (this binary as the demo server) are always there.
func serveServers(t *testing.T) string {
	t.Helper()
	proctest.CheckNoLeaks(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	marker := map[string]string{proctest.MarkerEnv: proctest.Marker(t)}
	demoEnv := map[string]string{proctest.MarkerEnv: proctest.Marker(t), demo.EnvServer: "1"}
	cfg, _ := json.Marshal(map[string]any{"servers": map[string]any{
		"everything": map[string]any{"command": testenv.Node(t), "scope": "global", "env": marker,
			"args": []string{testenv.NPMPackageBin(t, "@modelcontextprotocol/server-everything")}},
		"demo": map[string]any{"command": exe, "scope": "global", "env": demoEnv},
	}})
	dir := t.TempDir()
	state, sock := filepath.Join(dir, "state"), filepath.Join(dir, "mcpx.sock")
	cfgPath := filepath.Join(dir, "config.json")
	testenv.WriteFile(t, cfgPath, string(cfg))
	ctx, stop := context.WithCancel(context.Background())
	var logs testenv.SyncBuffer
	served := make(chan int, 1)
	go func() {
		served <- run(ctx, []string{"serve", "--config", cfgPath, "--socket", sock, "--state-dir", state, "--listen", "off"},
			strings.NewReader(""), &testenv.SyncBuffer{}, &logs)
	}()
	t.Cleanup(func() {
		stop()
		if code := <-served; code != exitOK {
			t.Errorf("serve exited %d:\n%s", code, logs.String())
		}
	})
	testenv.WaitFor(t, "the socket to answer", func() bool { return client.Answers(sock) })
	return sock
}

// cliRun runs one mcpx command in process against sock with stdin.
func cliRun(t *testing.T, sock string, stdin *os.File, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb testenv.SyncBuffer
	var in io.Reader = strings.NewReader("")
	if stdin != nil {
		in = stdin
	}
	code = run(t.Context(), append([]string{args[0], "--broker", sock, "--no-autostart", "--cwd", t.TempDir()}, args[1:]...),
		in, &out, &errb)
	return code, out.String(), errb.String()
}

// The resource, prompt and completion commands against server-everything
// and the demo server.
func TestResourcePromptCompleteCommands(t *testing.T) {
	sock := serveServers(t)
	dir := t.TempDir()
	blob := filepath.Join(dir, "blob.bin")
	tests := []struct {
		args     []string
		code     int
		out, err []string // substrings of stdout and stderr
	}{
		{[]string{"resources", "everything", "--templates"}, 0, []string{"URI TEMPLATE", "demo://resource/dynamic/text/{resourceId}"}, nil},
		{[]string{"resources", "everything"}, 0, []string{"demo://resource/static/"}, nil},
		{[]string{"resources", "--json", "demo"}, 0, []string{`"server":"demo"`, demo.ReadmeURI}, nil},
		{[]string{"resource", "demo", demo.ReadmeURI}, 0, []string{firstLine(demo.ReadmeText)}, nil},
		{[]string{"resource", "everything", "demo://resource/dynamic/text/5"}, 0, []string{"Resource 5: This is a plaintext resource"}, nil},
		{[]string{"resource", "everything", "demo://resource/dynamic/blob/5", "-o", blob}, 0, nil, []string{"bytes to " + blob}},
		{[]string{"resource", "--json", "everything", "demo://resource/dynamic/blob/5"}, 0, []string{`"blob":"`}, nil},
		{[]string{"resource", "everything"}, 2, nil, []string{"want <server> <uri>"}},
		{[]string{"prompts", "everything"}, 0, []string{"completable-prompt", "department name"}, nil},
		{[]string{"prompts", "demo"}, 0, []string{"greet", "name"}, nil},
		{[]string{"prompt", "everything", "completable-prompt", "department=Sales", "name=Eve"}, 0, []string{"user: Please promote Eve to the head of the Sales team."}, nil},
		{[]string{"prompt", "demo", "greet", "name=Ada"}, 0, []string{"Ada"}, nil},
		{[]string{"prompt", "everything", "completable-promt"}, 4, nil, []string{`server everything: no prompt "completable-promt"; did you mean "completable-prompt"?`}},
		{[]string{"prompt", "everything", "completable-prompt", "department=Sales", "nam=Eve"}, 4, nil, []string{`takes no argument "nam"; did you mean "name"?`}},
		{[]string{"prompt", "everything", "completable-prompt", "department=Sales"}, 4, nil, []string{"needs argument name (name=…)"}},
		{[]string{"prompt", "demo", "greet", "Ada"}, 2, nil, []string{`"Ada" is not key=value`}},
		{[]string{"complete", "everything", "--prompt", "completable-prompt", "department", "S"}, 0, []string{"Sales\nSupport\n"}, nil},
		{[]string{"complete", "everything", "--prompt", "completable-prompt", "--context", "department=Engineering", "name"}, 0, []string{"Alice\nBob\nCharlie\n"}, nil},
		{[]string{"complete", "everything", "--resource", "demo://resource/dynamic/text/{resourceId}", "resourceId", "4"}, 0, []string{"4\n"}, nil},
		{[]string{"complete", "--json", "everything", "--prompt", "completable-prompt", "department", "E"}, 0, []string{`"values":["Engineering"]`}, nil},
		{[]string{"complete", "everything", "department"}, 2, nil, []string{"exactly one of --prompt NAME and --resource URI"}},
		{[]string{"complete", "everything", "--prompt", "completable-promt", "department"}, 4, nil, []string{`did you mean "completable-prompt"?`}},
		// An embedded text resource prints as its text.
		{[]string{"call", "everything.get-resource-reference", `{"resourceType":"Text","resourceId":2}`}, 0, []string{"\nResource 2: This is a plaintext resource created at "}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errs := cliRun(t, sock, nil, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errs)
			}
			for _, w := range tt.out {
				if !strings.Contains(out, w) {
					t.Errorf("stdout\n%s\nlacks %q", out, w)
				}
			}
			for _, w := range tt.err {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr\n%s\nlacks %q", errs, w)
				}
			}
		})
	}
	_, raw, _ := cliRun(t, sock, nil, "resource", "--json", "everything", "demo://resource/dynamic/blob/5")
	var res struct {
		Contents []struct{ Blob string } `json:"contents"`
	}
	json.Unmarshal([]byte(raw), &res)
	want, _ := base64.StdEncoding.DecodeString(res.Contents[0].Blob)
	// The blob says when it was made ("… created at 10:03:44 PM"): two
	// reads a second apart differ there, and only there.
	stamp := regexp.MustCompile(`\d+:\d\d:\d\d [AP]M`)
	if got, err := os.ReadFile(blob); err != nil || stamp.ReplaceAllString(string(got), "T") != stamp.ReplaceAllString(string(want), "T") || len(want) == 0 {
		t.Errorf("-o wrote %q (%v), want the blob's %d bytes %q", got, err, len(want), want)
	}
	if code, _, errs := cliRun(t, sock, nil, "resource", "everything", "demo://resource/dynamic/blob/5"); code != 0 || errs != "" {
		t.Errorf("a blob to a redirected stdout: exit %d, %s", code, errs)
	}
}

// A binary resource is not printed to a terminal.
func TestResourceRefusesBinaryOnTerminal(t *testing.T) {
	sock := serveServers(t)
	_, tty := openPTY(t)
	var errb testenv.SyncBuffer
	code := run(t.Context(), []string{"resource", "--broker", sock, "--no-autostart", "everything", "demo://resource/dynamic/blob/1"},
		strings.NewReader(""), tty, &errb)
	if got := errb.String(); code != exitUsage || !strings.Contains(got, "is binary") || !strings.Contains(got, "-o FILE") {
		t.Errorf("exit %d, stderr %s; want a refusal with the -o hint", code, got)
	}
}

// mcpx call --log-level: the child's notifications/message on stderr,
// named by its server; a bad level is a usage error.
func TestCallLogLevel(t *testing.T) {
	sock := serveServers(t)
	code, _, errs := cliRun(t, sock, nil, "call", "--log-level", "loud", "everything.echo")
	if code != exitUsage || !strings.Contains(errs, `--log-level "loud" is not one of debug, info`) {
		t.Errorf("bad level: exit %d, %s", code, errs)
	}
	// The demo server speaks the stateless era, which has no logging/setLevel.
	code, out, errs := cliRun(t, sock, nil, "call", "--log-level", "info", "demo.echo", `{"message":"hi"}`)
	if code != 0 || out != "hi\n" || !strings.Contains(errs, "mcpx: server demo took no log level (") {
		t.Errorf("a server without logging: exit %d\nstdout %s\nstderr %s\nwant the call made, and a warning", code, out, errs)
	}
	code, out, errs = cliRun(t, sock, nil, "call", "--log-level", "debug", "everything.toggle-simulated-logging")
	if code != 0 || !strings.Contains(out, "Started simulated") || !strings.Contains(errs, "everything [") || !regexp.MustCompile(`everything \[\w+\]: \w+.level.message`).MatchString(errs) {
		t.Errorf("exit %d\nstdout %s\nstderr %s\nwant the child's log message on stderr, named everything", code, out, errs)
	}
}

// URL-mode elicitation through mcpx call: on a terminal the URL is shown
// and Enter accepts; without one mcpx declines and says why.
func TestCallURLElicitation(t *testing.T) {
	sock := serveServers(t)
	args := []string{"call", "everything.trigger-url-elicitation", `{"url":"https://example.com/consent","elicitationId":"e1"}`}

	code, out, errs := cliRun(t, sock, nil, args...)
	if code != 0 || !strings.Contains(out, "declined") ||
		!strings.Contains(errs, `mcpx: declined the server's request for elicitation "Please open the link to complete this action.": mcpx call is not interactive: stdin is not a terminal`) {
		t.Errorf("without a terminal: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}

	pty, tty := openPTY(t)
	if _, err := pty.Write([]byte("\n")); err != nil { // Enter, typed ahead
		t.Fatal(err)
	}
	code, out, errs = cliRun(t, sock, tty, args...)
	if code != 0 || !strings.Contains(out, "User completed the URL elicitation flow") ||
		!strings.Contains(errs, "The server asks you to open a URL: Please open the link") || !strings.Contains(errs, "  https://example.com/consent\n") {
		t.Errorf("on a terminal: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
}

// openPTY opens a pseudo-terminal: the master (what the user types into)
// and the slave (the command's terminal), closed at the test's end.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	var unlock int32
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, m.Fd(), unix.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlockpt: %v", e)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// A URL-mode request on the terminal: the URL in full, Enter accepts, d
// declines, c cancels, end of input declines.
func TestTerminalFormURL(t *testing.T) {
	for _, tt := range []struct{ typed, want string }{
		{"\n", "accept"}, {"d\n", "decline"}, {"c\n", "cancel"}, {"", "decline"}, {"what\n", "decline"},
	} {
		var out strings.Builder
		got, err := newTerminalForm(strings.NewReader(tt.typed), &out).answer(t.Context(),
			wire.InputRequest{Kind: wire.InputElicitation, Mode: wire.InputModeURL, Message: "Sign in", URL: "https://example.com/x?a=1"})
		if err != nil || got.Action != tt.want || got.Content != nil {
			t.Errorf("typed %q: %+v, %v; want %s", tt.typed, got, err, tt.want)
		}
		if !strings.Contains(out.String(), "Sign in\n  https://example.com/x?a=1\n") {
			t.Errorf("typed %q: the terminal shows %q, without the URL", tt.typed, out.String())
		}
	}
}
