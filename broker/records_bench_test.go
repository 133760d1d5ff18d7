package broker_test

import (
	"testing"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/config"
)

// BenchmarkBrokerCallToolRecords is a warm echo call through
// broker.CallTool with the call log off and on, alternating in one run:
// the difference is what recording costs a call (building the record, the
// isError check, the hand-over). broker-cpu-ns/op includes the writer's
// goroutine; dropped/op counts records the writer was too far behind to
// take.
//
//	go test -run '^$' -bench 'BrokerCallToolRecords' -count 5 ./broker
func BenchmarkBrokerCallToolRecords(b *testing.B) {
	brokers := map[string]*broker.Broker{}
	for _, name := range []string{"off", "on"} {
		on := name == "on"
		br := startDemoBroker(b, demoSetup{scopes: map[string]config.ScopeKind{"demo": config.ScopeGlobal},
			config: func(c *config.Config) { c.Records.Enabled = &on },
			opts:   broker.Options{StateDir: b.TempDir()}})
		benchCall(b, br, broker.Request{Caller: benchCaller, Server: "demo"}) // start the child outside the timing
		brokers[name] = br
	}
	r := broker.Request{Caller: benchCaller, Server: "demo"}
	for _, mode := range []string{"c=1", "parallel"} {
		for _, name := range []string{"off", "on"} {
			br := brokers[name]
			b.Run(mode+"/records="+name, func(b *testing.B) {
				b.ReportAllocs()
				_, before := br.RecordsStatus()
				cpu := benchCPUNow()
				if mode == "c=1" {
					for b.Loop() {
						benchCall(b, br, r)
					}
				} else {
					b.SetParallelism(16) // 32 callers on 2 cores, as the load tool's c=32
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							benchCall(b, br, r)
						}
					})
				}
				benchCPUReport(b, cpu)
				_, after := br.RecordsStatus()
				b.ReportMetric(float64(after.Dropped-before.Dropped)/float64(b.N), "dropped/op")
				if after.Failed != 0 {
					b.Fatalf("records lost: %+v", after)
				}
			})
		}
	}
}
