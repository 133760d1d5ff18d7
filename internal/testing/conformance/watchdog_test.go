package conformance

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWatchdogTellsWhereARequestWaits: a POST still unanswered after the
// watchdog's wait is logged with its session and body, once with the
// goroutines inside mcpx; a GET (a stream) and an answered POST are not.
func TestWatchdogTellsWhereARequestWaits(t *testing.T) {
	var mu sync.Mutex
	var logs []string
	wd := &watchdog{after: 50 * time.Millisecond, logf: func(f string, args ...any) {
		mu.Lock()
		logs = append(logs, fmt.Sprintf(f, args...))
		mu.Unlock()
	}}
	release := make(chan struct{})
	h := wd.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Hang") != "" {
			<-release
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	send := func(method, body string, hang bool) {
		req, _ := http.NewRequest(method, srv.URL+"/mcp/x", strings.NewReader(body))
		req.Header.Set("Mcp-Session-Id", "s1")
		if hang {
			req.Header.Set("Hang", "1")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
	}
	send("POST", `{"method":"ping"}`, false)
	done := make(chan struct{})
	go func() { defer close(done); send("POST", `{"method":"resources/read"}`, true) }()
	go send("GET", "", true)
	for i := 0; ; i++ {
		mu.Lock()
		n := len(logs)
		mu.Unlock()
		if n >= 2 || i > 600 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(release)
	<-done
	wd.end()
	mu.Lock()
	defer mu.Unlock()
	if len(logs) != 2 {
		t.Fatalf("logs %q, want the waiting POST and the goroutines", logs)
	}
	if !strings.Contains(logs[0], `POST /mcp/x (session "s1")`) || !strings.Contains(logs[0], "resources/read") {
		t.Errorf("the waiting request's line: %s", logs[0])
	}
	if !strings.Contains(logs[1], "goroutines inside mcpx") {
		t.Errorf("second log: %.200s", logs[1])
	}
}
