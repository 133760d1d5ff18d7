package daemon_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/daemon"
	"mcpx.dev/mcpx/observe/daemonlog"
)

// TestLogLevelsResolve: with no level set, debug goes to the file and info
// to stderr; log.level sets both; $MCPX_LOG_LEVEL wins over log.level, and
// a session's and a server's own levels win over either, most specific
// first; a bad $MCPX_LOG_LEVEL is said and ignored (issue 35).
func TestLogLevelsResolve(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		lc         config.Log
		env        string
		file, errs string // the messages each sink got, in order
	}{
		{name: "defaults", file: "d,i,w,sd,gd", errs: "i,w"},
		{name: "config", lc: config.Log{Level: "warn"}, file: "w", errs: "w"},
		{name: "env over config", lc: config.Log{Level: "warn"}, env: "debug", file: "d,i,w,sd,gd", errs: "d,i,w,sd,gd"},
		{name: "session over server over global", env: "warn",
			lc:   config.Log{Servers: map[string]string{"gh": "debug"}, Sessions: map[string]string{"session:s": "error"}},
			file: "w,gd", errs: "w,gd"},
		{name: "bad env", env: "loud", lc: config.Log{Level: "warn"}, file: "bad,w", errs: "bad,w"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			state := t.TempDir()
			var stderr bytes.Buffer
			log, f, err := daemon.OpenLog(tc.lc, state, &stderr, func(k string) string {
				if k == "MCPX_LOG_LEVEL" {
					return tc.env
				}
				return ""
			})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			log.Debug("d")
			log.Info("i")
			log.Warn("w")
			log.Debug("sd", "server", "gh", "key", "session:s") // the session's level
			log.Debug("gd", "server", "gh", "key", "session:t") // the server's
			var file []string
			if err := f.Read(daemonlog.Query{Level: slog.LevelDebug}, func(l []byte) error {
				file = append(file, msgOf(string(l), `"msg":"`))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			var errs []string
			for l := range strings.Lines(stderr.String()) {
				errs = append(errs, msgOf(l, "msg="))
			}
			if got := strings.Join(file, ","); got != tc.file {
				t.Errorf("file got %s, want %s", got, tc.file)
			}
			if got := strings.Join(errs, ","); got != tc.errs {
				t.Errorf("stderr got %s, want %s\n%s", got, tc.errs, stderr.String())
			}
		})
	}
}

// msgOf is a record's message, as far as the tests' messages go: the word
// after prefix ("bad" for the warning about $MCPX_LOG_LEVEL).
func msgOf(line, prefix string) string {
	_, rest, _ := strings.Cut(line, prefix)
	rest = strings.TrimPrefix(rest, `"`)
	end := strings.IndexAny(rest, "\" \n")
	if end < 0 {
		end = len(rest)
	}
	if m := rest[:end]; len(m) <= 2 {
		return m
	}
	return "bad"
}
