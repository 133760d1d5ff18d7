package client

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// peer is a scripted fake MCP server at the other end of two pipes: the test
// reads exactly what the client wrote and writes exact JSON lines back.
type peer struct {
	t   *testing.T
	in  *bufio.Reader  // what the client sent
	out *io.PipeWriter // to the client's stdout reader
	tr  Transport      // the client's end
}

func newPeer(t *testing.T) *peer {
	t.Helper()
	cr, pw := io.Pipe() // peer → client
	pr, cw := io.Pipe() // client → peer
	p := &peer{t: t, in: bufio.NewReaderSize(pr, 1<<20), out: pw, tr: NewStdio(cr, cw)}
	t.Cleanup(func() { pw.Close(); pr.Close() })
	return p
}

// recv returns the next line the client sent, without its newline.
func (p *peer) recv() string {
	p.t.Helper()
	line, err := p.in.ReadString('\n')
	if err != nil {
		p.t.Fatalf("peer: reading from client: %v", err)
	}
	return strings.TrimSuffix(line, "\n")
}

// recvMsg reads the next message and decodes it.
func (p *peer) recvMsg() map[string]any {
	p.t.Helper()
	var m map[string]any
	line := p.recv()
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		p.t.Fatalf("peer: client sent invalid JSON %q: %v", line, err)
	}
	return m
}

// send writes one line to the client.
func (p *peer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.out, line+"\n"); err != nil {
		p.t.Fatalf("peer: writing to client: %v", err)
	}
}

// expect reads the next line and compares it byte for byte.
func (p *peer) expect(want string) {
	p.t.Helper()
	if got := p.recv(); got != want {
		p.t.Errorf("client sent\n%s\nwant\n%s", got, want)
	}
}

// connect runs Connect against the peer, answering initialize with version.
func (p *peer) connect(opts Options, version string) *Session {
	p.t.Helper()
	return p.connectResult(opts, `{"protocolVersion":"`+version+`","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"peer","version":"1"}}`)
}

// connectResult is connect with the peer answering initialize with result.
func (p *peer) connectResult(opts Options, initResult string) *Session {
	p.t.Helper()
	type result struct {
		s   *Session
		err error
	}
	ch := make(chan result, 1)
	if opts.Era == "" {
		opts.Era = EraHandshake // the peer scripts the handshake
	}
	go func() {
		s, err := Connect(p.t.Context(), p.tr, opts)
		ch <- result{s, err}
	}()
	init := p.recvMsg()
	if init["method"] != "initialize" {
		p.t.Fatalf("first message is %v, want initialize", init)
	}
	p.send(`{"jsonrpc":"2.0","id":1,"result":` + initResult + `}`)
	p.expect(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r := <-ch
	if r.err != nil {
		p.t.Fatalf("Connect: %v", r.err)
	}
	p.t.Cleanup(func() { r.s.Close() })
	return r.s
}

// callResult is what a Call goroutine returns.
type callResult struct {
	res json.RawMessage
	err error
}

// goCall runs Call in a goroutine.
func goCall(ctx context.Context, s *Session, method, params string, onProgress func(json.RawMessage)) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		var p json.RawMessage
		if params != "" {
			p = json.RawMessage(params)
		}
		res, err := s.Call(ctx, method, p, onProgress)
		ch <- callResult{res, err}
	}()
	return ch
}
