package api_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestPrometheusScrapesTheFleet runs a real Prometheus server (Debian's
// prometheus package) given only the http_sd URL of one broker, alpha:
// alpha's /v1/fleet/sd lists itself and beta (its fleet's other broker),
// and Prometheus scrapes both at /metrics, as a caller with the metrics
// right alone (?who=metrics names the caller to these test listeners, as a
// tailnet grant would), until both are up and their series carry the
// broker label. The tailnet is stood for by loopback addresses, one per
// broker at one port (sdFleet): Prometheus is a process of its own and
// cannot join a test tailnet.
func TestPrometheusScrapesTheFleet(t *testing.T) {
	prom := testenv.Program(t, "prometheus", "apt-get install -y prometheus")
	proctest.CheckNoLeaks(t)
	alpha, _, _ := sdFleet(t)

	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: mcpx
    params:
      who: [metrics]
    http_sd_configs:
      - url: %s/v1/fleet/sd?who=metrics
        refresh_interval: 1s
`, alpha)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	cmd := exec.Command(prom, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	cmd.Env = append(os.Environ(), proctest.Env(t))
	logs := &testenv.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopPrometheus(t, cmd)
		if t.Failed() {
			t.Logf("prometheus's output:\n%s", logs)
		}
	})

	api := "http://" + addr + "/api/v1/"
	var targets []promTarget
	testenv.WaitFor(t, "Prometheus to scrape alpha and beta", func() bool {
		targets = activeTargets(api)
		return slices.ContainsFunc(targets, promUp("alpha")) && slices.ContainsFunc(targets, promUp("beta"))
	})
	for _, tg := range targets {
		if tg.Labels["broker"] == "alpha" && (tg.DiscoveredLabels["__meta_mcpx_broker_self"] != "true" || tg.DiscoveredLabels["__meta_mcpx_broker_version"] != "test") {
			t.Errorf("alpha's discovered labels: %v", tg.DiscoveredLabels)
		}
	}
	testenv.WaitFor(t, "mcpx_build_info of both brokers in Prometheus", func() bool {
		return slices.Equal(queryBrokers(api, "mcpx_build_info"), []string{"alpha", "beta"})
	})
}

// promTarget is one of /api/v1/targets' active targets.
type promTarget struct {
	Labels           map[string]string `json:"labels"`
	DiscoveredLabels map[string]string `json:"discoveredLabels"`
	Health           string            `json:"health"`
	LastError        string            `json:"lastError"`
}

func promUp(broker string) func(promTarget) bool {
	return func(tg promTarget) bool { return tg.Labels["broker"] == broker && tg.Health == "up" }
}

// activeTargets asks Prometheus's API for its targets; none while it is
// not answering yet.
func activeTargets(api string) []promTarget {
	var doc struct {
		Data struct {
			ActiveTargets []promTarget `json:"activeTargets"`
		} `json:"data"`
	}
	if promGet(api+"targets?state=active", &doc) != nil {
		return nil
	}
	return doc.Data.ActiveTargets
}

// queryBrokers is the sorted broker labels of the series query answers.
func queryBrokers(api, query string) []string {
	var doc struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	if promGet(api+"query?query="+url.QueryEscape(query), &doc) != nil {
		return nil
	}
	var out []string
	for _, r := range doc.Data.Result {
		out = append(out, r.Metric["broker"])
	}
	slices.Sort(out)
	return out
}

func promGet(u string, v any) error {
	c := &http.Client{Timeout: 2 * time.Second}
	r, err := c.Get(u)
	if err != nil {
		return err
	}
	defer r.Body.Close()
	if r.StatusCode != 200 {
		return fmt.Errorf("%s: %s", u, r.Status)
	}
	return json.NewDecoder(r.Body).Decode(v)
}

// freeLoopbackAddr is a loopback address whose port was free a moment
// ago, for a server that cannot be told to listen on port 0 and say which.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
}

// stopPrometheus stops cmd with SIGTERM, then SIGKILL after 10s, and reaps it.
func stopPrometheus(t *testing.T, cmd *exec.Cmd) {
	cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }() //nolint:errcheck // killed on purpose
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("prometheus did not stop within 10s of SIGTERM; killing it")
		cmd.Process.Kill() //nolint:errcheck
		<-done
	}
}
