package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// results is everything one run measured; -json writes it as is.
type results struct {
	Machine machine      `json:"machine"`
	Options optionsDoc   `json:"options"`
	Cells   []cell       `json:"cells"` // every round
	Cold    []coldResult `json:"cold"`  // one per round
	Memory  memory       `json:"memory"`
	// Sessions is the memory per idle session of each MCP path's server.
	Sessions []sessionMemory `json:"sessions,omitempty"`
	// Derived by summarize.
	Summary    []cell  `json:"summary"` // medians over rounds; Round = 0
	Checks     []check `json:"checks"`
	ProfileTop string  `json:"profileTop,omitempty"`
}

type machine struct {
	NumCPU       int    `json:"numCPU"`
	GoVersion    string `json:"goVersion"`
	CPU          string `json:"cpu"`
	LoadAvgStart string `json:"loadAvgStart"`
	LoadAvgEnd   string `json:"loadAvgEnd"`
	Date         string `json:"date"`
}

type optionsDoc struct {
	Rounds      int      `json:"rounds"`
	DurationMs  int64    `json:"durationMs"`
	WarmMs      int64    `json:"warmMs"`
	MaxCalls    int      `json:"maxCalls"`
	C           []int    `json:"c"`
	Paths       []string `json:"paths"`
	ProfilePath string   `json:"profilePath,omitempty"`
}

type coldResult struct {
	DirectMs float64 `json:"directMs"` // spawn mcpx demo-server, initialize, first call
	BrokerMs float64 `json:"brokerMs"` // first call for a new worktree key through the daemon
}

type memory struct {
	IdleKB          int `json:"idleKB"`          // daemon after start, no child
	OneChildKB      int `json:"oneChildKB"`      // daemon after one call started the demo child
	ChildKB         int `json:"childKB"`         // that child
	AfterLoadKB     int `json:"afterLoadKB"`     // daemon right after the last round
	AfterLoadIdleKB int `json:"afterLoadIdleKB"` // one second later
	Instances       int `json:"instances"`       // children alive after the rounds
}

// check is one target: a median over rounds of a within-round value.
type check struct {
	Name     string    `json:"name"`
	Value    float64   `json:"value"`
	PerRound []float64 `json:"perRound,omitempty"`
	Target   string    `json:"target"`
	Met      *bool     `json:"met,omitempty"` // nil = informational
	Unit     string    `json:"unit"`
}

func newResults(o *options) *results {
	return &results{
		Machine: machine{NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), CPU: cpuModel(),
			LoadAvgStart: loadAvg(), Date: time.Now().UTC().Format(time.RFC3339)},
		Options: optionsDoc{Rounds: o.rounds, DurationMs: o.duration.Milliseconds(), WarmMs: o.warm.Milliseconds(),
			MaxCalls: o.maxCalls, C: o.conc, Paths: o.paths},
	}
}

func (r *results) find(round int, path string, c int) (cell, bool) {
	for _, cl := range r.Cells {
		if cl.Round == round && cl.Path == path && cl.C == c {
			return cl, true
		}
	}
	return cell{}, false
}

// summarize computes the medians and the checks against the targets.
func (r *results) summarize() {
	for _, p := range r.Options.Paths {
		for _, c := range r.Options.C {
			var p50, p99, cps, cli, dae, chi []float64
			calls := 0
			for round := 1; round <= r.Options.Rounds; round++ {
				cl, ok := r.find(round, p, c)
				if !ok {
					continue
				}
				p50, p99, cps = append(p50, cl.P50us), append(p99, cl.P99us), append(cps, cl.CallsPerSec)
				cli, dae, chi = append(cli, cl.ClientCPUus), append(dae, cl.DaemonCPUus), append(chi, cl.ChildCPUus)
				calls += cl.Calls
			}
			r.Summary = append(r.Summary, cell{Path: p, C: c, Calls: calls,
				P50us: median(p50), P99us: median(p99), CallsPerSec: median(cps),
				ClientCPUus: median(cli), DaemonCPUus: median(dae), ChildCPUus: median(chi)})
		}
	}
	hi := r.Options.C[len(r.Options.C)-1]
	for _, q := range []struct{ broker, direct, hop string }{
		{"U", "A0", "H"}, {"Uwt", "A0", "H"}, {"T", "A0", "H"},
		{"U", "A0", "Hx"}, {"Ur", "A0r", "Hx"}, {"Ur", "A0r", "Hraw"},
	} {
		target := "≤ 1.5"
		if q.broker == "Ur" || q.hop != "H" {
			target = "(≤ 1.5, informational)"
		}
		r.ratio(fmt.Sprintf("%s / (%s + %s) p50, c=1", q.broker, q.direct, q.hop), target, q.broker == "Ur" || q.hop != "H", 1.5, func(round int) (float64, bool) {
			b, ok1 := r.find(round, q.broker, 1)
			d, ok2 := r.find(round, q.direct, 1)
			h, ok3 := r.find(round, q.hop, 1)
			return b.P50us / (d.P50us + h.P50us), ok1 && ok2 && ok3
		})
	}
	for _, p := range []string{"U", "T", "Uwt", "Ur", "A0", "H"} {
		info := p == "A0" || p == "H" || hi < 32
		target := "≥ 8,000"
		if info {
			target = "(reference)"
		}
		r.atLeast(fmt.Sprintf("%s calls/s, c=%d", p, hi), target, info, 8000, func(round int) (float64, bool) {
			cl, ok := r.find(round, p, hi)
			return cl.CallsPerSec, ok
		})
	}
	for _, c := range r.Options.C {
		for _, m := range []struct {
			name string
			get  func(cell) float64
		}{{"p50", func(cl cell) float64 { return cl.P50us }}, {"calls/s", func(cl cell) float64 { return cl.CallsPerSec }}} {
			xs := r.perRound(func(round int) (float64, bool) {
				a, ok1 := r.find(round, "Um", c)
				b, ok2 := r.find(round, "U", c)
				return m.get(a) / m.get(b), ok1 && ok2
			})
			if len(xs) > 0 {
				r.Checks = append(r.Checks, check{Name: fmt.Sprintf("Um / U %s, c=%d (/metrics scraped every second vs not)", m.name, c),
					Value: median(xs), PerRound: xs, Target: "(informational)", Unit: "×"})
			}
		}
	}
	for _, q := range [][2]string{{"U", "A0"}, {"Ur", "A0r"}} {
		xs := r.perRound(func(round int) (float64, bool) {
			b, ok1 := r.find(round, q[0], hi)
			d, ok2 := r.find(round, q[1], hi)
			return b.CallsPerSec / d.CallsPerSec, ok1 && ok2
		})
		if len(xs) > 0 {
			r.Checks = append(r.Checks, check{Name: fmt.Sprintf("%s / %s calls/s, c=%d (share of the child's direct throughput)", q[0], q[1], hi),
				Value: median(xs), PerRound: xs, Target: "(informational)", Unit: "×"})
		}
	}
	r.mcpChecks()
	met := func(b bool) *bool { return &b }
	if m := r.Memory; m.IdleKB > 0 {
		mb := float64(m.IdleKB) / 1024
		r.Checks = append(r.Checks, check{Name: "daemon idle RSS after start", Value: mb, Target: "< 30", Met: met(mb < 30), Unit: "MB"})
		r.Checks = append(r.Checks, check{Name: "daemon RSS, idle with one warm child", Value: float64(m.OneChildKB) / 1024, Target: "(< 30)", Unit: "MB"})
		r.Checks = append(r.Checks, check{Name: fmt.Sprintf("daemon RSS after load (%d children)", m.Instances), Value: float64(m.AfterLoadKB) / 1024, Target: "(< 30)", Unit: "MB"})
	}
	if len(r.Cold) > 0 {
		var d, b, diff []float64
		for _, c := range r.Cold {
			d, b, diff = append(d, c.DirectMs), append(b, c.BrokerMs), append(diff, c.BrokerMs-c.DirectMs)
		}
		r.Checks = append(r.Checks,
			check{Name: "cold first call, direct (spawn + initialize + call)", Value: median(d), PerRound: d, Target: "(reference)", Unit: "ms"},
			check{Name: "cold first call through the daemon (new worktree key)", Value: median(b), PerRound: b, Target: "(reference)", Unit: "ms"},
			check{Name: "cold: daemon − direct", Value: median(diff), PerRound: diff, Target: "≤ 5 (\"a few ms\")", Met: met(median(diff) <= 5), Unit: "ms"})
	}
}

// mcpChecks are issue 20's goals for the MCP endpoint (M: mcpx's /mcp)
// against the REST call on the same listener (T), the one-hop floor (F) and
// mcp-hub (G), each a median of within-round ratios; and the memory per idle
// session of every MCP path measured.
func (r *results) mcpChecks() {
	lo, hi := r.Options.C[0], r.Options.C[len(r.Options.C)-1]
	get := func(path string, c int, f func(cell) float64) func(int) (float64, bool) {
		return func(round int) (float64, bool) {
			cl, ok := r.find(round, path, c)
			return f(cl), ok
		}
	}
	p50 := func(cl cell) float64 { return cl.P50us }
	cps := func(cl cell) float64 { return cl.CallsPerSec }
	for _, q := range []struct {
		name, target string
		a, b         string
		c            int
		f            func(cell) float64
		limit        float64 // 0 = informational
		atMost       bool
	}{
		{fmt.Sprintf("M / T p50, c=%d (/mcp vs REST on the same listener)", lo), "≤ 1.2", "M", "T", lo, p50, 1.2, true},
		{fmt.Sprintf("M1 / T p50, c=%d (/mcp/demo vs REST)", lo), "(informational)", "M1", "T", lo, p50, 0, true},
		{fmt.Sprintf("M / F calls/s, c=%d (share of the one-hop floor)", hi), "≥ 0.8", "M", "F", hi, cps, 0.8, false},
		{fmt.Sprintf("M / G calls/s, c=%d (vs mcp-hub)", hi), "≥ 6", "M", "G", hi, cps, 6, false},
		{fmt.Sprintf("G / M p50, c=%d (how many times faster than mcp-hub)", lo), "≥ 5", "G", "M", lo, p50, 5, false},
		{fmt.Sprintf("F / G calls/s, c=%d (the floor vs mcp-hub)", hi), "(informational)", "F", "G", hi, cps, 0, false},
		{fmt.Sprintf("G / F p50, c=%d (mcp-hub vs the floor)", lo), "(informational)", "G", "F", lo, p50, 0, false},
		{fmt.Sprintf("T / G calls/s, c=%d (REST today vs mcp-hub)", hi), "(informational)", "T", "G", hi, cps, 0, false},
		{fmt.Sprintf("G / T p50, c=%d (REST today vs mcp-hub)", lo), "(informational)", "G", "T", lo, p50, 0, false},
		{fmt.Sprintf("Ur / Gr calls/s, c=%d (REST today vs mcp-hub, lean child)", hi), "(informational)", "Ur", "Gr", hi, cps, 0, false},
		{fmt.Sprintf("Gr / Ur p50, c=%d (REST today vs mcp-hub, lean child)", lo), "(informational)", "Gr", "Ur", lo, p50, 0, false},
		{fmt.Sprintf("Mr / Gr calls/s, c=%d (the gateways alone: lean child)", hi), "(informational)", "Mr", "Gr", hi, cps, 0, false},
		{fmt.Sprintf("Gr / Mr p50, c=%d (the gateways alone: lean child)", lo), "(informational)", "Gr", "Mr", lo, p50, 0, false},
		{fmt.Sprintf("Mr / F calls/s, c=%d (lean child vs the floor)", hi), "(informational)", "Mr", "F", hi, cps, 0, false},
		{fmt.Sprintf("Gr / F calls/s, c=%d (lean child vs the floor)", hi), "(informational)", "Gr", "F", hi, cps, 0, false},
	} {
		fa, fb := get(q.a, q.c, q.f), get(q.b, q.c, q.f)
		xs := r.perRound(func(round int) (float64, bool) {
			a, ok1 := fa(round)
			b, ok2 := fb(round)
			return a / b, ok1 && ok2 && b > 0
		})
		if len(xs) == 0 {
			continue
		}
		c := check{Name: q.name, Value: median(xs), PerRound: xs, Target: q.target, Unit: "×"}
		if q.limit > 0 {
			ok := c.Value >= q.limit
			if q.atMost {
				ok = c.Value <= q.limit
			}
			c.Met = &ok
		}
		r.Checks = append(r.Checks, c)
	}
	for _, p := range []string{"F", "G", "Gr", "M", "M1", "Mr", "X"} {
		r.atLeast(fmt.Sprintf("%s calls/s, c=%d", p, hi), "(reference)", true, 0, get(p, hi, cps))
	}
	for _, m := range r.Sessions {
		r.Checks = append(r.Checks, check{Name: fmt.Sprintf("%s server RSS per idle MCP session (%d sessions, %.1f → %.1f MB)", m.Path, m.Sessions, float64(m.BeforeKB)/1024, float64(m.AfterKB)/1024),
			Value: m.PerSessionKB, Target: "(reference)", Unit: "KB"})
	}
}

func (r *results) perRound(f func(round int) (float64, bool)) []float64 {
	var xs []float64
	for round := 1; round <= r.Options.Rounds; round++ {
		if v, ok := f(round); ok {
			xs = append(xs, v)
		}
	}
	return xs
}

func (r *results) ratio(name, target string, info bool, limit float64, f func(int) (float64, bool)) {
	xs := r.perRound(f)
	if len(xs) == 0 {
		return
	}
	c := check{Name: name, Value: median(xs), PerRound: xs, Target: target, Unit: "×"}
	if !info {
		ok := c.Value <= limit
		c.Met = &ok
	}
	r.Checks = append(r.Checks, c)
}

func (r *results) atLeast(name, target string, info bool, limit float64, f func(int) (float64, bool)) {
	xs := r.perRound(f)
	if len(xs) == 0 {
		return
	}
	c := check{Name: name, Value: median(xs), PerRound: xs, Target: target, Unit: "calls/s"}
	if !info {
		ok := c.Value >= limit
		c.Met = &ok
	}
	r.Checks = append(r.Checks, c)
}

func writeMarkdown(w io.Writer, r *results) {
	m := r.Machine
	fmt.Fprintf(w, "Machine: %d CPUs (%s), %s, load average %s at start, %s at end; %s.\n",
		m.NumCPU, m.CPU, m.GoVersion, m.LoadAvgStart, m.LoadAvgEnd, m.Date)
	o := r.Options
	fmt.Fprintf(w, "Run: %d interleaved rounds, %s per cell after %s warm-up (at most %d calls), medians over rounds.\n\n",
		o.Rounds, time.Duration(o.DurationMs)*time.Millisecond, time.Duration(o.WarmMs)*time.Millisecond, o.MaxCalls)

	fmt.Fprint(w, "| path |")
	for _, c := range o.C {
		fmt.Fprintf(w, " p50 µs c=%d | p99 µs c=%d | calls/s c=%d |", c, c, c)
	}
	lo, hi := o.C[0], o.C[len(o.C)-1]
	fmt.Fprintf(w, " CPU µs/call client / daemon / child, c=%d |", lo)
	if hi != lo {
		fmt.Fprintf(w, " same, c=%d |", hi)
	}
	fmt.Fprint(w, "\n|---|")
	for range o.C {
		fmt.Fprint(w, "---:|---:|---:|")
	}
	fmt.Fprint(w, "---:|")
	if hi != lo {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	for _, p := range o.Paths {
		fmt.Fprintf(w, "| %s |", p)
		var first, last cell
		for i, c := range o.C {
			s := r.summary(p, c)
			fmt.Fprintf(w, " %s | %s | %s |", num(s.P50us), num(s.P99us), num(s.CallsPerSec))
			if i == 0 {
				first = s
			}
			last = s
		}
		fmt.Fprintf(w, " %s |", cpus(first))
		if hi != lo {
			fmt.Fprintf(w, " %s |", cpus(last))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	for _, p := range o.Paths {
		fmt.Fprintf(w, "- **%s**: %s\n", p, pathDesc[p])
	}
	fmt.Fprintln(w, "\nCPU per call is process CPU time over the measurement divided by calls: client = this process\n(for H and Hraw it includes the in-process server), daemon = `mcpx serve` (for Hx the echo\nserver process), child = the MCP child answering. /proc counts 10 ms ticks.")

	fmt.Fprintln(w, "\n| check | median | per round | target | met |\n|---|---:|---|---|---|")
	for _, c := range r.Checks {
		var rounds []string
		for _, x := range c.PerRound {
			rounds = append(rounds, short(x))
		}
		met := ""
		if c.Met != nil {
			met = map[bool]string{true: "yes", false: "**no**"}[*c.Met]
		}
		fmt.Fprintf(w, "| %s | %s %s | %s | %s | %s |\n", c.Name, short(c.Value), c.Unit, strings.Join(rounds, ", "), c.Target, met)
	}
	if r.ProfileTop != "" {
		fmt.Fprintf(w, "\nDaemon CPU profile (%s load), top functions:\n\n```\n%s```\n", r.Options.ProfilePath, r.ProfileTop)
	}
}

func (r *results) summary(p string, c int) cell {
	for _, s := range r.Summary {
		if s.Path == p && s.C == c {
			return s
		}
	}
	return cell{}
}

func cpus(s cell) string {
	f := func(x float64) string {
		if x < 0 {
			return "–"
		}
		return short(x)
	}
	return f(s.ClientCPUus) + " / " + f(s.DaemonCPUus) + " / " + f(s.ChildCPUus)
}

// num formats with thousands separators and no decimals.
func num(x float64) string {
	s := fmt.Sprintf("%.0f", x)
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	return b.String()
}

func short(x float64) string {
	switch {
	case x >= 1000 || x <= -1000:
		return num(x)
	case x >= 100 || x <= -100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10 || x <= -10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

func writeJSON(path string, r *results) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
