package client

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// TestSealHoldsWrites: a sealed stdio session writes nothing until
// unsealed, and Seal waits for a message being written to be written
// whole (it gives up when its ctx ends first, as for a child that does
// not read).
func TestSealHoldsWrites(t *testing.T) {
	inR, inW, err := os.Pipe() // the child's stdin: the test reads what the session writes
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe() // the child's stdout: nothing is ever answered
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	defer outW.Close()
	s, err := Restore(NewStdio(outR, inW), Options{}, Snapshot{Era: EraHandshake, Version: "2025-11-25", InitResult: []byte(`{}`), NextID: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// A message larger than the pipe holds: its write blocks until read.
	big := `{"x":"` + strings.Repeat("a", 1<<20) + `"}`
	sent := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := s.CallTool(ctx, "big", []byte(big), nil)
		sent <- err
	}()
	rd := bufio.NewReaderSize(inR, 1<<21)
	if _, err := rd.Peek(1); err != nil { // the write has begun
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if _, ok := s.Seal(short); ok {
		t.Fatal("Seal took the writer while a message was half written")
	}
	cancel()

	// Read the big message whole; Seal then gets the writer.
	sealed := make(chan func(), 1)
	go func() {
		unseal, ok := s.Seal(context.Background())
		if ok {
			sealed <- unseal
		}
	}()
	line, err := rd.ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":8`) || !strings.HasSuffix(line, "\"}}}\n") {
		t.Fatalf("the big request, whole: %d bytes, %v", len(line), err)
	}
	unseal := <-sealed

	// Sealed: a request waits, and gives up with its ctx, writing nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err = s.CallTool(ctx, "echo", nil, nil)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call on a sealed session: %v, want the deadline", err)
	}
	inR.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if b, err := rd.ReadByte(); err == nil {
		t.Fatalf("a sealed session wrote %q", b)
	}

	// Unsealed: the next request is written.
	inR.SetReadDeadline(time.Time{})
	unseal()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.CallTool(ctx, "echo", nil, nil) //nolint:errcheck // never answered; the line is what counts
	}()
	if line, err := rd.ReadString('\n'); err != nil || !strings.Contains(line, `"method":"tools/call"`) {
		t.Fatalf("after unseal: %q, %v", line, err)
	}
}
