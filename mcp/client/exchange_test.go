package client

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestExchanges replays the JSON-RPC exchanges in testdata/exchange, one
// archive each (go-sdk's conformance tests keep theirs so): its comment
// says what it shows; "options" is the session's Options as JSON (Era
// defaults to the handshake); "exchange" is the dialogue on the wire, a
// message a line, "-> " for what the client must send, byte for byte, and
// "<- " for what the peer answers; "version", if present, is the version
// Connect must negotiate (so it must succeed).
func TestExchanges(t *testing.T) {
	files, err := filepath.Glob("testdata/exchange/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no exchanges in testdata/exchange: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sections := map[string][]byte{}
			for _, f := range a.Files {
				sections[f.Name] = f.Data
			}
			opts := Options{Era: EraHandshake}
			if o := sections["options"]; o != nil {
				dec := json.NewDecoder(bytes.NewReader(o))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&opts); err != nil {
					t.Fatalf("%s: options: %v", file, err)
				}
			}
			p := newPeer(t)
			type result struct {
				s   *Session
				err error
			}
			connected := make(chan result, 1)
			go func() {
				s, err := Connect(t.Context(), p.tr, opts)
				connected <- result{s, err}
			}()
			for i, line := range strings.Split(strings.TrimSpace(string(sections["exchange"])), "\n") {
				dir, msg, ok := strings.Cut(line, " ")
				switch {
				case ok && dir == "->":
					p.expect(msg)
				case ok && dir == "<-":
					p.send(msg)
				default:
					t.Fatalf("%s: exchange line %d is neither -> nor <-: %q", file, i+1, line)
				}
			}
			want := strings.TrimSpace(string(sections["version"]))
			if want == "" {
				return // the peer's cleanup ends the session
			}
			r := <-connected
			if r.err != nil {
				t.Fatalf("Connect: %v; want version %s", r.err, want)
			}
			defer r.s.Close()
			if v := r.s.ProtocolVersion(); v != want {
				t.Errorf("ProtocolVersion = %q, want %q", v, want)
			}
		})
	}
}
