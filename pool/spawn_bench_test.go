package pool_test

import (
	"context"
	"os"
	"testing"

	"mcpx.dev/mcpx/internal/demo"
	"mcpx.dev/mcpx/pool"
	"mcpx.dev/mcpx/pool/proc"
)

// BenchmarkSpawnWatchdog measures what the watchdog costs (real-use 8):
// "spawn/plain" and "spawn/supervised" are a child's spawn, initialize and
// first echo without and with a Supervisor (and its watchdog) active — the
// watchdog is one process per daemon, so they should not differ; "start"
// is Supervise and Close themselves, the watchdog's start and stop, paid
// once per daemon.
func BenchmarkSpawnWatchdog(b *testing.B) {
	def := pool.Server{Name: "demo", Command: os.Args[0], Env: map[string]string{demo.EnvServer: "1", "GORACE": "atexit_sleep_ms=0"}}
	tg := pool.Target{Server: "demo", Key: "global"}
	spawn := func(b *testing.B) {
		for b.Loop() {
			p := pool.New(pool.Options{ReapInterval: -1, ExecWatch: -1})
			p.SetServers([]pool.Server{def})
			if err := p.Do(b.Context(), tg, benchEcho(b.Context())); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			p.Close(context.Background())
			b.StartTimer()
		}
	}
	b.Run("spawn/plain", spawn)
	b.Run("spawn/supervised", func(b *testing.B) {
		sup, err := proc.Supervise(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer sup.Close()
		spawn(b)
	})
	b.Run("start", func(b *testing.B) {
		dir := b.TempDir()
		for b.Loop() {
			sup, err := proc.Supervise(dir, nil)
			if err != nil {
				b.Fatal(err)
			}
			sup.Close()
		}
	})
}
