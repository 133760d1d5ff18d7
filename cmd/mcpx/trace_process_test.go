package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	otelresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// installOtelcol installs the test collector (internal/testing/otelcoltest, its own
// module); .ci/run deps runs it.
const installOtelcol = "cd internal/testing/otelcoltest && go install ./cmd/mcpx-otelcol (or: bash .ci/run deps)"

// TestTraceProcess is the traces' acceptance test: a real OpenTelemetry
// Collector (mcpx-otelcol: the OTLP receiver and the OTLP/HTTP exporter,
// exporting as JSON to a sink this test reads), a real `mcpx serve` with
// an otel block naming it, and a url child that traces (the otel SDK: it
// extracts the traceparent header and exports its own span to the same
// collector). One `mcpx call --trace` makes one trace whose tree, read
// back from the collector's export by span and parent ids, is
// CLI → API request → (pool wait, child call → the child's own span); the
// trace id the CLI printed is the trace's; the call record carries it.
func TestTraceProcess(t *testing.T) {
	t.Parallel() // a process test (plain_test.go)
	otelcol := testenv.Program(t, "mcpx-otelcol", installOtelcol)
	mcpx, dir, marker := processTest(t)

	sink := newSpanSink(t)
	collector, collectorGRPC := startCollector(t, otelcol, dir, sink.url, marker)

	// The url child: the demo server over Streamable HTTP, each tools/call
	// in a span of its own, a child of the caller's traceparent header.
	childTP := sdktrace.NewTracerProvider(
		sdktrace.WithSyncer(must(otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(collector+"/v1/traces")))),
		sdktrace.WithResource(otelresource.NewSchemaless(attribute.String("service.name", "child"))))
	defer childTP.Shutdown(context.Background())
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return demo.NewServer() }, nil)
	child := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"tools/call"`)) {
			mcpHandler.ServeHTTP(w, r)
			return
		}
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, sp := childTP.Tracer("child").Start(ctx, "child tools/call", trace.WithSpanKind(trace.SpanKindServer))
		defer sp.End()
		mcpHandler.ServeHTTP(w, r.WithContext(ctx))
	}))
	defer child.Close()

	cfg := filepath.Join(dir, "config.json")
	testenv.WriteFile(t, cfg, fmt.Sprintf(`{"servers": {"traced": {"url": %q}}, "otel": {"endpoint": %q}}`, child.URL, collector))
	sock := filepath.Join(dir, "mcpx.sock")
	logs := new(testenv.SyncBuffer)
	daemon := exec.Command(mcpx, "serve", "--socket", sock, "--state-dir", filepath.Join(dir, "state"), "--listen", "off", "--config", cfg)
	daemon.Env = append(os.Environ(), marker, "XDG_CONFIG_HOME="+filepath.Join(dir, "xdg"))
	daemon.Stdout, daemon.Stderr = logs, logs
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			daemon.Process.Signal(os.Interrupt)
			daemon.Wait()
		}
	}
	defer stop()
	testenv.WaitFor(t, "the daemon to serve", func() bool { return strings.Contains(logs.String(), "mcpx serving") })

	// traced runs a calling command with --trace, the collector named by
	// the standard variables in env, and returns its stdout and the trace
	// id it printed on stderr.
	traced := func(env []string, args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(mcpx, append([]string{args[0], "--trace", "--broker", sock, "--cwd", dir}, args[1:]...)...)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), marker, "MCPX_NO_AUTOSTART=1"), env...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("mcpx %s --trace: %v\nstdout %q\nstderr %s\ndaemon:\n%s", args[0], err, out.String(), errOut.String(), logs.String())
		}
		m := regexp.MustCompile(`mcpx: trace ([0-9a-f]{32})`).FindStringSubmatch(errOut.String())
		if m == nil {
			t.Fatalf("mcpx %s --trace printed no trace id on stderr: %q", args[0], errOut.String())
		}
		return strings.TrimSpace(out.String()), m[1]
	}
	httpEnv := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector}
	out, traceID := traced(httpEnv, "call", "traced.echo", `{"message":"traced"}`)
	if out != "traced" {
		t.Fatalf("mcpx call --trace printed %q, want the echo", out)
	}
	// A script of `mcpx exec --trace`: the generated client sends the
	// TRACEPARENT the command set, so its call is in the command's trace.
	testenv.Node(t)
	out, execTrace := traced(httpEnv, "exec", "--runtime", "node", `return (await traced.echo({message: "from a script"})).content[0].text`)
	if out != `"from a script"` {
		t.Fatalf("mcpx exec --trace printed %q, want the echo", out)
	}
	// The CLI's span over gRPC, as the standard variables ask.
	_, grpcTrace := traced([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collectorGRPC, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, "call", "traced.echo", `{"message":"grpc"}`)
	stop() // flushes the daemon's spans

	want := []string{"mcpx call traced.echo", "POST /v1/servers/{server}/tools/{tool}", "mcpx.pool.wait", "mcpx.child.call", "child tools/call"}
	var spans map[string]span
	missing := want
	for deadline := time.Now().Add(30 * time.Second); len(missing) > 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		spans = sink.trace(traceID)
		missing = slices.DeleteFunc(slices.Clone(want), func(name string) bool { _, ok := spans[name]; return ok })
	}
	if len(missing) > 0 {
		t.Fatalf("the collector exported no span %q of trace %s; it exported %+v\ndaemon:\n%s", missing, traceID, sink.all(), logs.String())
	}
	cli, api, wait, call, own := spans[want[0]], spans[want[1]], spans[want[2]], spans[want[3]], spans[want[4]]
	for _, c := range []struct {
		child, parent span
	}{{api, cli}, {wait, api}, {call, api}, {own, call}} {
		if c.child.Parent != c.parent.ID {
			t.Errorf("span %q has parent %s, want %q (%s)\nall spans: %+v", c.child.Name, c.child.Parent, c.parent.Name, c.parent.ID, spans)
		}
	}
	if cli.Parent != "" {
		t.Errorf("the CLI's span has parent %s, want none: it starts the trace", cli.Parent)
	}
	for _, name := range []string{"mcpx.authorize", "mcpx.scope", "mcpx.spawn", "mcpx.initialize"} {
		if _, ok := spans[name]; !ok {
			t.Errorf("no %s span in the trace: %+v", name, spans)
		}
	}
	if got := spans["mcpx.scope"].Attrs["mcpx.scope.kind"]; got == "" {
		t.Errorf("the scope span has no mcpx.scope.kind: %+v", spans["mcpx.scope"])
	}
	for _, sp := range spans {
		for k, v := range sp.Attrs {
			if strings.Contains(v, dir) || strings.Contains(v, `"traced"`) {
				t.Errorf("span %q attribute %s=%q carries a cwd or the arguments", sp.Name, k, v)
			}
		}
	}
	var scriptSpans map[string]span
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if scriptSpans = sink.trace(execTrace); scriptSpans["mcpx exec"].ID != "" && scriptSpans["mcpx.child.call"].ID != "" {
			break
		}
	}
	if root, api := scriptSpans["mcpx exec"], scriptSpans["POST /v1/servers/{server}/tools/{tool}"]; root.ID == "" || api.ID == "" || api.Parent != root.ID {
		t.Errorf("the script's call is not in the trace of mcpx exec --trace under its span: %+v", scriptSpans)
	}

	testenv.WaitFor(t, "the CLI's span sent over gRPC", func() bool { return sink.trace(grpcTrace)["mcpx call traced.echo"].ID != "" })

	if !regexp.MustCompile(`msg=spawned .*trace_id=` + traceID).MatchString(logs.String()) {
		t.Errorf("the daemon's log line of the spawn the call made does not carry trace_id=%s:\n%s", traceID, logs.String())
	}

	files, _ := filepath.Glob(filepath.Join(dir, "state", broker.RecordsDir, "*.jsonl"))
	var recs []byte
	for _, f := range files {
		b, _ := os.ReadFile(f)
		recs = append(recs, b...)
	}
	if !bytes.Contains(recs, []byte(`"trace_id":"`+traceID+`"`)) {
		t.Errorf("the call records %v do not carry trace_id %s:\n%s", files, traceID, recs)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// span is one exported span as the test reads it.
type span struct {
	Name, ID, Parent string
	Attrs            map[string]string
}

// spanSink is the collector's export target: OTLP/HTTP JSON, kept by trace.
type spanSink struct {
	url   string
	mu    sync.Mutex
	spans map[string]map[string]span // trace id → name → span
}

func newSpanSink(t *testing.T) *spanSink {
	s := &spanSink{spans: map[string]map[string]span{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var doc struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []struct {
						TraceID      string `json:"traceId"`
						SpanID       string `json:"spanId"`
						ParentSpanID string `json:"parentSpanId"`
						Name         string `json:"name"`
						Attributes   []struct {
							Key   string         `json:"key"`
							Value map[string]any `json:"value"`
						} `json:"attributes"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if r.URL.Path != "/v1/traces" || json.NewDecoder(r.Body).Decode(&doc) != nil {
			http.Error(w, "want OTLP JSON at /v1/traces", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, rs := range doc.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					got := span{Name: sp.Name, ID: sp.SpanID, Parent: sp.ParentSpanID, Attrs: map[string]string{}}
					for _, a := range sp.Attributes {
						for _, v := range a.Value {
							got.Attrs[a.Key] = fmt.Sprint(v)
						}
					}
					if s.spans[sp.TraceID] == nil {
						s.spans[sp.TraceID] = map[string]span{}
					}
					s.spans[sp.TraceID][sp.Name] = got
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// all returns every span seen, by trace.
func (s *spanSink) all() map[string]map[string]span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.spans)
}

// trace returns a copy of the spans of traceID seen so far, by name.
func (s *spanSink) trace(traceID string) map[string]span {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]span{}
	for k, v := range s.spans[traceID] {
		out[k] = v
	}
	return out
}

// startCollector runs mcpx-otelcol on loopback, receiving OTLP/HTTP and
// OTLP/gRPC and exporting every span to sink as JSON, and returns its
// receivers' base URLs. It is stopped (and waited for) at the test's end.
func startCollector(t *testing.T, bin, dir, sink, marker string) (httpURL, grpcURL string) {
	t.Helper()
	port, grpcPort := freeLoopbackPort(t), freeLoopbackPort(t)
	conf := filepath.Join(dir, "otelcol.yaml")
	testenv.WriteFile(t, conf, fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
      grpc:
        endpoint: 127.0.0.1:%d
exporters:
  otlp_http:
    endpoint: %s
    encoding: json
    compression: none
service:
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [otlp_http]
`, port, grpcPort, sink))
	logs := new(testenv.SyncBuffer)
	cmd := exec.Command(bin, "--config", conf)
	cmd.Env = append(os.Environ(), marker)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("collector:\n%s", logs.String())
		}
	})
	testenv.WaitFor(t, "the collector to listen", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return fmt.Sprintf("http://127.0.0.1:%d", port), fmt.Sprintf("http://127.0.0.1:%d", grpcPort)
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
