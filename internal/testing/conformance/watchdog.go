package conformance

import (
	"bytes"
	"io"
	"net/http"
	"runtime/pprof"
	"strings"
	"sync"
	"time"
)

// slowAfter is how long a request other than a GET stream (POST, DELETE)
// may take through the proxy before the watchdog tells the test log about
// it: well within the suite's 30 s per scenario, well beyond any answer of
// a healthy server.
const slowAfter = 20 * time.Second

// watchdog wraps a proxy's handler: a request that has not been answered
// after slowAfter is logged (method, path, session, the body's start),
// and the first time, so are the test process's goroutines inside mcpx
// (the in-process daemon's), so that a scenario the suite times out
// ("scenario-timeout") says where it waited. It never fails a test by
// itself.
type watchdog struct {
	logf  func(format string, args ...any) // the test's Logf
	after time.Duration                    // slowAfter, but in its own test
	mu    sync.Mutex
	// over: the test has ended; nothing more is logged.
	over   bool
	dumped bool
}

func (wd *watchdog) end() {
	wd.mu.Lock()
	wd.over = true
	wd.mu.Unlock()
}

func (wd *watchdog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		start := time.Now()
		t := time.AfterFunc(wd.after, func() { wd.slow(r, body, start) })
		defer t.Stop()
		h.ServeHTTP(w, r)
	})
}

// slow logs a request still waiting.
func (wd *watchdog) slow(r *http.Request, body []byte, start time.Time) {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.over {
		return
	}
	head := string(body)
	if len(head) > 300 {
		head = head[:300] + "…"
	}
	wd.logf("conformance proxy: %s %s (session %q) unanswered since %s: %s",
		r.Method, r.URL.Path, r.Header.Get("Mcp-Session-Id"), start.Format("15:04:05.000"), head)
	if !wd.dumped {
		wd.dumped = true
		wd.logf("conformance proxy: the goroutines inside mcpx then:\n%s", mcpxGoroutines(24<<10))
	}
}

// mcpxGoroutines is the process's goroutine stacks that pass through
// mcpx's own packages (not its tests'), at most max bytes.
func mcpxGoroutines(max int) string {
	var all bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&all, 2) //nolint:errcheck // a buffer
	var out strings.Builder
	for _, g := range strings.Split(all.String(), "\n\n") {
		if !strings.Contains(g, "mcpx.dev/mcpx/") || strings.Contains(g, "internal/testing/conformance.") {
			continue
		}
		if out.Len()+len(g) > max {
			out.WriteString("… (cut)\n")
			break
		}
		out.WriteString(g)
		out.WriteString("\n\n")
	}
	return out.String()
}
