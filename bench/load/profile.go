package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"mcpx.dev/mcpx/api"
	"mcpx.dev/mcpx/api/mcp"
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
	"mcpx.dev/mcpx/wire"
)

// envProfDaemon, set to a JSON profSpec, makes this binary serve the API
// like `mcpx serve` (same broker and api packages, unix socket only) while
// writing a CPU profile (and, at the end, an allocation profile beside it),
// until SIGTERM. It serves the MCP endpoint too.
const envProfDaemon = "MCPX_BENCH_PROFILE_DAEMON"

type profSpec struct {
	Config  string `json:"config"`
	Socket  string `json:"socket"`
	Profile string `json:"profile"`
}

// serveProfiled is the instrumented daemon: cmd/mcpx's serve wiring without
// the TCP listener, plus runtime/pprof.
func serveProfiled(spec string) int {
	var s profSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, "profiled daemon:", err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := config.Load(s.Config)
	if err != nil {
		log.Error("config", "err", err)
		return 1
	}
	b, err := broker.New(broker.Options{Config: cfg, Logger: log})
	if err != nil {
		log.Error("broker", "err", err)
		return 1
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.Close(ctx)
	}()
	ln, err := api.ListenUnix(s.Socket)
	if err != nil {
		log.Error("listen", "err", err)
		return 1
	}
	f, err := os.Create(s.Profile)
	if err != nil {
		log.Error("profile", "err", err)
		return 1
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Error("profile", "err", err)
		return 1
	}
	defer pprof.StopCPUProfile()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log.Info("profiled daemon serving", "socket", s.Socket)
	m := mcp.New(mcp.Options{Broker: b, Logger: log, InputWait: cfg.Limits.InputWait.D()})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		m.Close(ctx)
	}()
	err = api.Serve(ctx, ln, api.New(api.Options{Broker: b, MCP: m, Logger: log}), api.ServeOptions{Logger: log})
	// and the allocations since start, beside the CPU profile
	if af, aerr := os.Create(s.Profile + ".allocs"); aerr == nil {
		pprof.Lookup("allocs").WriteTo(af, 0)
		af.Close()
	}
	if err != nil {
		log.Error("serve", "err", err)
		return 1
	}
	return 0
}

// profileDaemon runs the instrumented daemon under -profile-path load (half the time at
// the highest concurrency, half at c=1) and returns pprof's top listings.
func profileDaemon(ctx context.Context, o *options, config, dir, wt, self string, logf func(string, ...any)) (string, error) {
	prof, err := filepath.Abs(o.profile)
	if err != nil {
		return "", err
	}
	sock := filepath.Join(dir, "p.sock")
	spec, _ := json.Marshal(profSpec{Config: config, Socket: sock, Profile: prof})
	cmd := exec.Command(self)
	cmd.Env = []string{envProfDaemon + "=" + string(spec)}
	d, err := startServe(ctx, "", cmd, sock, false, logf)
	if err != nil {
		return "", err
	}
	defer d.stop()
	h := http.Header{"Content-Type": {"application/json"}, "Mcpx-Session": {"bench"}, wire.HeaderClient: {"mcpx-bench"}}
	server := map[string]string{"U": "demo", "Uwt": "demowt", "Ur": "raw", "M": "demo", "Mr": "raw"}[o.profPath]
	if o.profPath == "Uwt" {
		h.Set("Mcpx-Cwd", wt)
	}
	p := &path{name: o.profPath + " (profiled)", call: postCall(d.unix, "http://mcpx/v1/servers/"+server+"/tools/echo", h), procs: none}
	if o.profPath == "M" || o.profPath == "Mr" {
		// the MCP endpoint on the unix socket (served there as on TCP), one session per caller
		tgt := &mcpTarget{url: "http://mcpx/mcp", hc: d.unix, tool: server + "__echo", args: echoArgs, want: "hi", version: o.mcpVersion}
		ms, err := openSessions(ctx, tgt, o.conc[len(o.conc)-1])
		if err != nil {
			return "", err
		}
		defer ms.close()
		p.call = ms.call
	}
	if err := warmPath(ctx, p); err != nil {
		return "", err
	}
	for _, c := range []int{o.conc[len(o.conc)-1], 1} {
		if _, _, err := load(ctx, p, c, o.profDur/2, 10*o.maxCalls, false); err != nil {
			return "", err
		}
	}
	d.stop()
	logf("wrote %s", prof)
	flat, err := pprofTop(ctx, self, prof, "-top", "-nodecount", "25")
	if err != nil {
		return "", err
	}
	cum, err := pprofTop(ctx, self, prof, "-top", "-cum", "-nodecount", "400")
	if err != nil {
		return "", err
	}
	var mine []string
	for line := range strings.Lines(cum) {
		if strings.Contains(line, "mcpx.dev/") || strings.Contains(line, "encoding/json.Unmarshal") ||
			strings.Contains(line, "net/http.(*conn).serve") || strings.Contains(line, "gzhttp") || strings.Contains(line, "chi/v5.(*Mux)") {
			mine = append(mine, line)
		}
		if len(mine) == 40 {
			break
		}
	}
	return flat + "\ncumulative, mcpx and HTTP frames:\n" + strings.Join(mine, ""), nil
}

func pprofTop(ctx context.Context, bin, prof string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", append(append([]string{"tool", "pprof"}, args...), bin, prof)...)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go tool pprof: %w", err)
	}
	return string(out), nil
}
