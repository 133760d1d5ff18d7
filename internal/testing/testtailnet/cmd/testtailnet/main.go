// Command testtailnet runs a test tailnet on loopback (tailscale's test
// control server, DERP and STUN; package testtailnet) for trying mcpx's
// tailnet side offline and for the benchmarks. It prints the control URL
// on its first line, then serves until its stdin closes or it is signalled.
//
//	go run ./internal/testtailnet/cmd/testtailnet -grant '{"servers": ["*"], "roots": ["/"]}'
//	control http://127.0.0.1:41234
//
// Nodes join with that URL as their control URL and no auth key; give a
// node in another process the environment testtailnet.Env.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"mcpx.dev/mcpx/internal/testing/testtailnet"
	"mcpx.dev/mcpx/tsnet"
)

func main() {
	capName := flag.String("cap", tsnet.DefaultCapability, "the app capability -grant names")
	var grants []string
	flag.Func("grant", "a rule of the global grant of -cap to every node (JSON; repeat for more elements)", func(s string) error {
		grants = append(grants, s)
		return nil
	})
	flag.Parse()
	if err := run(*capName, grants); err != nil {
		fmt.Fprintln(os.Stderr, "testtailnet:", err)
		os.Exit(1)
	}
}

func run(capName string, grants []string) error {
	tn, err := testtailnet.Start(testtailnet.Options{})
	if err != nil {
		return err
	}
	defer tn.Close()
	if len(grants) > 0 {
		g, err := testtailnet.Grant(capName, grants...)
		if err != nil {
			return err
		}
		tn.Control.SetGlobalAppCaps(g)
	}
	fmt.Printf("control %s\n", tn.URL)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { // stdin closed: whoever started us is gone
		io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	<-ctx.Done()
	return nil
}
