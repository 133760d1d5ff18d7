package main

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"mcpx.dev/mcpx/mcp/client"
)

func TestQuantileAndMedian(t *testing.T) {
	lat := make([]time.Duration, 100)
	for i := range lat {
		lat[i] = time.Duration(i+1) * time.Microsecond
	}
	if got := quantile(lat, 0.50); got != 50*time.Microsecond {
		t.Errorf("p50 = %v", got)
	}
	if got := quantile(lat, 0.99); got != 99*time.Microsecond {
		t.Errorf("p99 = %v", got)
	}
	if got := quantile(lat[:1], 0.99); got != time.Microsecond {
		t.Errorf("p99 of one = %v", got)
	}
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median odd = %v", got)
	}
	if got := median([]float64{4, 1, 2, 3}); got != 2.5 {
		t.Errorf("median even = %v", got)
	}
}

func TestNum(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567.4: "1,234,567", -61234: "-61,234"} {
		if got := num(in); got != want {
			t.Errorf("num(%v) = %q, want %q", in, got, want)
		}
	}
}

// TestRawChild checks that the minimal echo child speaks enough MCP for
// the broker's client: initialize, tools/list and tools/call.
func TestRawChild(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int)
	go func() { done <- serveRawChild(inR, outW); outW.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, client.NewStdio(outR, inW), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := s.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var list []struct{ Name string }
	if err := json.Unmarshal(tools, &list); err != nil || len(list) != 1 || list[0].Name != "echo" {
		t.Fatalf("tools = %s (%v)", tools, err)
	}
	res, err := s.CallTool(ctx, "echo", json.RawMessage(`{"message":"h\"i"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Content []struct{ Type, Text string } }
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) != 1 || r.Content[0].Text != `h"i` {
		t.Fatalf("result = %s (%v)", res, err)
	}
	s.Close()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("raw child did not stop at EOF")
	}
}
