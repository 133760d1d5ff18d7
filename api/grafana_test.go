package api_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/wire"
)

// dashboardFile is the Grafana dashboard shipped for a fleet.
var dashboardFile = filepath.Join("..", "deploy", "grafana", "mcpx.json")

// grafanaDashboard is the part of Grafana's dashboard model the check reads.
type grafanaDashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *grafanaDS      `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaDS struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaPanel struct {
	ID         int        `json:"id"`
	Type       string     `json:"type"`
	Title      string     `json:"title"`
	Datasource *grafanaDS `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string     `json:"refId"`
		Expr       string     `json:"expr"`
		Datasource *grafanaDS `json:"datasource"`
	} `json:"targets"`
}

// TestGrafanaDashboard: the dashboard in deploy/ is a Grafana dashboard in
// shape (unique panel ids, panels on the 24-column grid, each with PromQL
// targets on the datasource variable, a broker variable), and every
// metric its queries name is one a real daemon's /metrics exports, with
// the labels the queries group and select by (histograms' _bucket, _sum
// and _count count; broker is the label /v1/fleet/sd gives each target).
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	exprs := checkDashboardShape(t, d)

	// A daemon that has served calls (ok, isError, failed) and refused a
	// request, so that the families counted as they happen exist.
	proctest.CheckNoLeaks(t)
	dm := apitest.Start(t, apitest.Options{Config: apitest.DemoConfig(t, map[string]string{"demo": `{"scope":"global"}`})})
	rt, _ := wire.Lookup(wire.OpCallTool)
	dm.Unix.Do(t, "POST", rt.Path("demo", "echo"), `{"message":"a"}`)
	dm.Unix.Do(t, "POST", rt.Path("demo", "fail"), `{"message":"b"}`)
	dm.Unix.Do(t, "POST", rt.Path("demo", "no-such-tool"), `{}`)
	get(t, dm.TCP.Base+"/v1/servers", "Authorization", "Bearer nope", wire.HeaderClient, "t")
	exported := exportedNames(scrapeMetrics(t, dm.TCP))

	metricName := regexp.MustCompile(`\bmcpx_[a-zA-Z0-9_:]*`)
	for _, expr := range exprs {
		used := metricName.FindAllString(expr, -1)
		if len(used) == 0 {
			t.Errorf("query %q names no mcpx metric", expr)
			continue
		}
		var labels []string
		for _, m := range used {
			l, ok := exported[m]
			if !ok {
				t.Errorf("query %q: the daemon exports no metric %s", expr, m)
			}
			labels = append(labels, l...)
		}
		for _, l := range queryLabels(expr) {
			if l != "broker" && l != "le" && !slices.Contains(labels, l) {
				t.Errorf("query %q: label %q is on none of %v", expr, l, used)
			}
		}
	}
}

// checkDashboardShape checks d's shape and returns the PromQL of its
// panels and variables.
func checkDashboardShape(t *testing.T, d grafanaDashboard) []string {
	t.Helper()
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 36 {
		t.Errorf("title %q, uid %q, schemaVersion %d: want a title, a uid and a schema of Grafana 9 or later", d.Title, d.UID, d.SchemaVersion)
	}
	var exprs []string
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type == "query" {
			var q struct{ Query string }
			if err := json.Unmarshal(v.Query, &q); err != nil || q.Query == "" {
				t.Errorf("variable %s: query %s is not {\"query\": PromQL}", v.Name, v.Query)
			}
			exprs = append(exprs, q.Query)
			if v.Datasource == nil || v.Datasource.UID != "${datasource}" {
				t.Errorf("variable %s: datasource %+v, want the datasource variable", v.Name, v.Datasource)
			}
		}
	}
	if vars["datasource"] != "datasource" || vars["broker"] != "query" {
		t.Errorf("variables %v: want datasource (a datasource variable) and broker (a query)", vars)
	}
	ids := map[int]bool{}
	queries := 0
	for _, p := range d.Panels {
		if p.ID <= 0 || ids[p.ID] {
			t.Errorf("panel %q: id %d is not a unique positive id", p.Title, p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if p.Title == "" || p.Type == "" || g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 || g.Y < 0 {
			t.Errorf("panel %d %q (%s): gridPos %+v is not on the 24-column grid, or no title or type", p.ID, p.Title, p.Type, g)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %d %q: datasource %+v, %d targets: want the datasource variable and targets", p.ID, p.Title, p.Datasource, len(p.Targets))
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.RefID == "" || refs[tg.RefID] || tg.Expr == "" || tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %d %q: target %+v: want a unique refId, an expr and the datasource variable", p.ID, p.Title, tg)
			}
			refs[tg.RefID] = true
			exprs = append(exprs, tg.Expr)
			queries++
		}
	}
	if queries < 10 {
		t.Errorf("%d queries: the dashboard lost its panels", queries)
	}
	return exprs
}

// exportedNames maps each metric name a scrape exports, a histogram's and
// a summary's series names included, to the labels of its series.
func exportedNames(s scrape) map[string][]string {
	out := map[string][]string{}
	for name, f := range s {
		var labels []string
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if !slices.Contains(labels, l.GetName()) {
					labels = append(labels, l.GetName())
				}
			}
		}
		out[name] = labels
		if f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				out[name+suffix] = labels
			}
		}
	}
	return out
}

var (
	byClause = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	matchers = regexp.MustCompile(`\{([^}]*)\}`)
	matcher  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	labelArg = regexp.MustCompile(`label_values\([^,]*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\)`)
)

// queryLabels are the label names expr groups by, selects on or asks the
// values of.
func queryLabels(expr string) []string {
	var out []string
	for _, m := range byClause.FindAllStringSubmatch(expr, -1) {
		for l := range strings.SplitSeq(m[1], ",") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	for _, m := range matchers.FindAllStringSubmatch(expr, -1) {
		for _, mm := range matcher.FindAllStringSubmatch(m[1], -1) {
			out = append(out, mm[1])
		}
	}
	for _, m := range labelArg.FindAllStringSubmatch(expr, -1) {
		out = append(out, m[1])
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}
