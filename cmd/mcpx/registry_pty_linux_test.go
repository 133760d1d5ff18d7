package main

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"mcpx.dev/mcpx/deploy/registry"
)

// TestTerminalPrompt: on a terminal, a required input is asked for on
// stderr; a secret is read with echo off, a plain value with it on.
func TestTerminalPrompt(t *testing.T) {
	master, slave := openPTY(t)
	var stderr strings.Builder
	ask := terminalPrompt(&cli{stdin: slave, stderr: &stderr})
	if ask == nil {
		t.Fatal("no prompt on a terminal")
	}
	if terminalPrompt(&cli{stdin: strings.NewReader("")}) != nil {
		t.Error("a prompt where stdin is no terminal")
	}
	echo := func() bool {
		tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
		return err == nil && tio.Lflag&unix.ECHO != 0
	}
	for _, tc := range []struct {
		value  string
		secret bool
	}{{"s3cret-value", true}, {"plain-value", false}} {
		got := make(chan string, 1)
		go func() {
			v, err := ask(registry.Variable{Key: "KEY", Where: "env KEY", Input: registry.Input{IsRequired: true, IsSecret: tc.secret, Description: "the key"}})
			if err != nil {
				v = "error: " + err.Error()
			}
			got <- v
		}()
		// Type once the prompt has the terminal as it wants it.
		for i := 0; i < 200 && echo() == tc.secret; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		if tc.secret {
			time.Sleep(50 * time.Millisecond) // ReadPassword may still be setting up
		}
		if _, err := master.WriteString(tc.value + "\n"); err != nil {
			t.Fatal(err)
		}
		var v string
		select {
		case v = <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("the prompt did not return")
		}
		if v != tc.value {
			t.Errorf("asked %q, got %q", tc.value, v)
		}
		// What the terminal showed, up to a mark written after the prompt.
		if _, err := slave.WriteString("END-OF-PROMPT\n"); err != nil {
			t.Fatal(err)
		}
		var shown strings.Builder
		buf := make([]byte, 4096)
		for i := 0; i < 100 && !strings.Contains(shown.String(), "END-OF-PROMPT"); i++ {
			n, err := master.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			shown.Write(buf[:n])
		}
		if echoed := strings.Contains(shown.String(), tc.value); echoed == tc.secret {
			t.Errorf("%q echoed: %v, want %v (terminal output %q)", tc.value, echoed, !tc.secret, shown.String())
		}
	}
	if !strings.Contains(stderr.String(), "KEY (env KEY: the key): ") {
		t.Errorf("the prompt: %q", stderr.String())
	}
}
