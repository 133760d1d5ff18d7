package mcp_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/conformance"
	"mcpx.dev/mcpx/internal/testing/proctest"
)

// upstreams are go-sdk's conformance server over Streamable HTTP, with
// sessions and stateless, for the suite to reach directly and mcpx as url
// servers.
type upstreams struct{ stateful, stateless string }

func startUpstreams(t *testing.T) upstreams {
	return upstreams{stateful: conformance.StartEverything(t, false), stateless: conformance.StartEverything(t, true)}
}

// conformanceDaemon serves go-sdk's conformance server as a stdio child
// twice: "everything" speaking the handshake era to mcpx, and
// "everything-stateless" the stateless one (the "protocol" setting), so
// that each leg of the suite reaches a child of its own era, as it does
// directly; and, given up, the same server over HTTP as the url servers
// "everything-url" (with sessions) and "everything-url-stateless".
func conformanceDaemon(t *testing.T, up upstreams) *apitest.Daemon {
	t.Helper()
	bin := conformance.EverythingBinary(t)
	servers := map[string]any{}
	for name, protocol := range map[string]string{"everything": "handshake", "everything-stateless": "stateless"} {
		servers[name] = map[string]any{"command": bin, "scope": "global", "sampling": true, "protocol": protocol,
			// The suite's roots scenarios want the client's roots.
			"callerRoots": true,
			"env":         map[string]string{proctest.MarkerEnv: proctest.Marker(t)}}
	}
	for name, url := range map[string]string{"everything-url": up.stateful, "everything-url-stateless": up.stateless} {
		if url != "" {
			servers[name] = map[string]any{"url": url, "sampling": true, "callerRoots": true}
		}
	}
	doc, _ := json.Marshal(map[string]any{"servers": servers})
	cfg, err := config.Parse(doc, "conformance.json")
	if err != nil {
		t.Fatal(err)
	}
	return apitest.Start(t, apitest.Options{Config: cfg})
}

// mustPass are scenarios each leg must run, and pass (through the check
// below), whatever else the suite does: resources (templates, subscribe,
// unsubscribe), prompts and completion. The 2026-07-28 revision removed
// resources/subscribe.
var mustPass = map[string][]string{
	"2025-11-25": {"resources-list", "resources-read-text", "resources-read-binary", "resources-templates-read",
		"resources-subscribe", "resources-unsubscribe", "prompts-list", "prompts-get-simple", "prompts-get-with-args",
		"prompts-get-embedded-resource", "prompts-get-with-image", "completion-complete"},
	"2026-07-28": {"resources-list", "resources-read-text", "resources-read-binary", "resources-templates-read",
		"prompts-list", "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource",
		"prompts-get-with-image", "completion-complete"},
}

// throughLeg is one comparison: the suite at a revision against an mcpx
// server and against the upstream it mirrors directly.
type throughLeg struct {
	requirements string
	server       string // under /mcp/
	stateless    bool   // which upstream the direct run reaches
}

// throughLegs: each revision through the stdio child of its era (against
// go-sdk CI's server for it) and through the url servers, the stateless
// upstream at both revisions.
var throughLegs = []throughLeg{
	{"2025-11-25", "everything", false},
	{"2025-11-25", "everything-url", false},
	{"2025-11-25", "everything-url-stateless", true},
	{"2026-07-28", "everything-stateless", true},
	{"2026-07-28", "everything-url-stateless", true},
}

// lostAnswerWarning is the one warning a url upstream with sessions costs
// through mcpx: go-sdk's server, run without an event store, closes the
// test_reconnection call's stream (SEP-1699) with a retry field but no
// event id, and the answer is lost. Directly the suite cannot resume (no
// id), so it notes that and warns nothing; through mcpx, whose streams
// have ids, it resumes, and mcpx has only the call's failure to give.
const lostAnswerWarning = "server-sse-polling: server-sse-disconnect-resume: "

// TestConformanceThroughMCPX runs the official conformance suite's server
// scenarios (internal/testing/conformance) against /mcp/{server} fronting
// go-sdk's conformance server, as a stdio child and as a url server with
// sessions and stateless: every scenario that passes against that server
// directly must pass through mcpx, with no more warnings. The legs run in
// parallel (the suite mostly waits on the network); the direct runs are
// shared.
func TestConformanceThroughMCPX(t *testing.T) {
	proctest.CheckNoLeaks(t)
	up := startUpstreams(t)
	d := conformanceDaemon(t, up)
	// One direct run per revision and upstream, by whichever leg asks
	// first (a run that fails its test leaves nil: the others compare
	// against nothing, and that test's failure stands).
	direct := map[throughLeg]func(t *testing.T) map[string]conformance.Result{}
	for _, leg := range throughLegs {
		key := throughLeg{requirements: leg.requirements, stateless: leg.stateless}
		url := up.stateful
		if leg.stateless {
			url = up.stateless
		}
		if direct[key] == nil {
			var once sync.Once
			var res map[string]conformance.Result
			direct[key] = func(t *testing.T) map[string]conformance.Result {
				once.Do(func() { res = conformance.Run(t, url, conformance.Options{Requirements: key.requirements}) })
				return res
			}
		}
	}
	for _, leg := range throughLegs {
		t.Run(leg.requirements+"/"+leg.server, func(t *testing.T) {
			t.Parallel()
			endpoint := "http://" + d.TCPAddr + "/mcp/" + leg.server
			through := conformance.Run(t, conformance.Proxy(t, endpoint, apitest.Token), conformance.Options{Requirements: leg.requirements})
			direct := direct[throughLeg{requirements: leg.requirements, stateless: leg.stateless}](t)
			t.Logf("through mcpx:\n%s", conformance.Table(through))
			for _, name := range mustPass[leg.requirements] {
				if r, ok := through[name]; !ok || r.Passed == 0 {
					t.Errorf("%s did not run through mcpx (results %+v, ran: %v)", name, r, ok)
				}
			}
			for _, name := range conformance.Lost(direct, through) {
				// The suite's client times its requests out on its own
				// clock, which a loaded CI machine can outrun (seen once,
				// resources-list under -race with other packages; and
				// once server-sse-polling, whose 10 s read deadline
				// cancels the stream: "terminated"): a scenario lost so is
				// run once more alone, and the first failure stays in the
				// log. A scenario mcpx breaks fails the second time too.
				if why := through[name].String(); strings.Contains(why, "timed out") || strings.Contains(why, "Error: terminated") {
					again := conformance.Run(t, conformance.Proxy(t, endpoint, apitest.Token),
						conformance.Options{Scenarios: []string{name}, SpecVersion: leg.requirements})
					if r, ok := again[name]; ok && r.OK() {
						t.Logf("%s timed out under load, then passed alone: %s", name, through[name])
						continue
					}
				}
				msg := through[name].String()
				if len(msg) > 800 {
					msg = msg[:800] + "…"
				}
				t.Errorf("%s passes directly but not through mcpx: %s", name, msg)
			}
			for _, w := range conformance.NewWarnings(direct, through) {
				if leg.server == "everything-url" && strings.HasPrefix(w, lostAnswerWarning) {
					t.Logf("the upstream lost the answer, mcpx could not resume it: %s", w)
					continue
				}
				// A warning can be a clock too: a notification that did not
				// arrive within the suite's wait (seen once in CI: the
				// stateless upstream's prompts list_changed on its
				// subscription stream, under load). The scenario runs once
				// more alone; the first warning stays in the log. A warning
				// mcpx causes comes back the second time.
				name, _, _ := strings.Cut(w, ": ")
				again := conformance.Run(t, conformance.Proxy(t, endpoint, apitest.Token),
					conformance.Options{Scenarios: []string{name}, SpecVersion: leg.requirements})
				if r, ok := again[name]; ok && r.OK() && len(conformance.NewWarnings(direct, again)) == 0 {
					t.Logf("a warning under load, gone when run alone: %s", w)
					continue
				}
				t.Errorf("a warning mcpx adds: %s", w)
			}
		})
	}
}

// TestConformanceDNSRebindingOnTheAggregate: the suite's DNS-rebinding
// scenario against /mcp, at both revisions.
func TestConformanceDNSRebindingOnTheAggregate(t *testing.T) {
	proctest.CheckNoLeaks(t)
	d := conformanceDaemon(t, upstreams{})
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		res := conformance.Run(t, conformance.Proxy(t, "http://"+d.TCPAddr+"/mcp", apitest.Token),
			conformance.Options{Scenarios: []string{"dns-rebinding-protection"}, SpecVersion: v})
		if r, ok := res["dns-rebinding-protection"]; !ok || !r.OK() || r.Passed == 0 {
			t.Errorf("dns-rebinding-protection at %s: %+v (ran: %v)", v, r, ok)
		}
	}
}
