package api_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// blobBytes are the bytes the tests have server-everything gzip into a
// blob resource: every byte value once.
func blobBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// checkBlob says whether blob, base64, is the gzip of blobBytes.
func checkBlob(t *testing.T, via, blob string) {
	t.Helper()
	gz, err := base64.StdEncoding.DecodeString(blob)
	if err != nil {
		t.Errorf("%s: the blob is not base64: %v", via, err)
		return
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Errorf("%s: the blob is not gzip: %v", via, err)
		return
	}
	got, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(got, blobBytes()) {
		t.Errorf("%s: the blob's bytes %x (%v), want 0x00…0xff", via, got, err)
	}
}

// TestBlobResourceIntact: server-everything's blob resource (the gzip of
// 256 bytes, made by its gzip-file-as-resource tool) reads byte-exact
// through REST and the MCP endpoint, the same blob both ways.
func TestBlobResourceIntact(t *testing.T) {
	d := apitest.Start(t, apitest.Options{Config: apitest.AddEverything(t, nil, nil)})
	data := "data:application/octet-stream;base64," + base64.StdEncoding.EncodeToString(blobBytes())
	args, _ := json.Marshal(map[string]string{"name": "bytes.gz", "data": data})
	if r := d.Unix.Do(t, "POST", "/v1/servers/everything/tools/gzip-file-as-resource", string(args)); r.StatusCode != 200 {
		t.Fatalf("gzip-file-as-resource: %d %s", r.StatusCode, r.Bytes)
	}
	const uri = "demo://resource/session/bytes.gz"
	var rest struct {
		Contents []struct{ URI, MimeType, Blob string }
	}
	d.Unix.Do(t, "GET", "/v1/servers/everything/resources/read?uri="+uri, "").Decode(t, &rest)
	if len(rest.Contents) != 1 || rest.Contents[0].MimeType != "application/gzip" {
		t.Fatalf("REST read: %+v", rest)
	}
	checkBlob(t, "REST", rest.Contents[0].Blob)

	for _, path := range []string{"/mcp/everything", "/mcp"} {
		_, cs := d.ConnectMCP(t, path, "2025-11-25", nil)
		if path == "/mcp" {
			if _, err := cs.ListResources(t.Context(), nil); err != nil { // the aggregate routes by what it listed
				t.Fatal(err)
			}
		}
		rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(rr.Contents) != 1 || rr.Contents[0].MIMEType != "application/gzip" {
			t.Fatalf("%s: %+v", path, rr.Contents)
		}
		checkBlob(t, path, base64.StdEncoding.EncodeToString(rr.Contents[0].Blob))
		if b := base64.StdEncoding.EncodeToString(rr.Contents[0].Blob); b != rest.Contents[0].Blob {
			t.Errorf("%s: another blob than REST's", path)
		}
	}
}

// TestTypeScriptClientResources runs testdata/client/resources.ts on node
// and deno against server-everything: readResource gives the blob
// byte-exact, and subscribeResource yields the child's update of the URI,
// then, stopped, leaves the subscription (the child's is dropped).
func TestTypeScriptClientResources(t *testing.T) {
	proctest.CheckNoLeaks(t)
	script, err := os.ReadFile(filepath.Join("testdata", "client", "resources.ts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range scriptRuntimes(t)[:2] { // node and deno
		t.Run(rt.name, func(t *testing.T) {
			// A child of its own: toggle-subscriber-updates toggles.
			d := apitest.Start(t, apitest.Options{Config: apitest.AddEverything(t, nil, nil)})
			res := d.TCP.Do(t, "GET", "/v1/clients/typescript", "")
			if res.StatusCode != 200 {
				t.Fatalf("GET /v1/clients/typescript: %d %s", res.StatusCode, res.Bytes)
			}
			dir := t.TempDir()
			for name, b := range map[string][]byte{"client.ts": res.Bytes, "script.ts": script} {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			argv := rt.cmd(t, dir)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.WaitDelay = 5 * time.Second
			home := t.TempDir()
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "MCPX_URL=http://" + d.TCPAddr, "MCPX_TOKEN=" + apitest.Token,
				"DENO_DIR=" + filepath.Join(home, "deno"), "DENO_NO_UPDATE_CHECK=1", "NO_COLOR=1", proctest.Env(t)}
			var stderr testenv.SyncBuffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v; stderr:\n%s", err, stderr.String())
			}
			var got struct{ Blob, MimeType, Updated string }
			if err := json.Unmarshal([]byte(strings.TrimSpace(string(out))), &got); err != nil {
				t.Fatalf("the script printed %q: %v", out, err)
			}
			checkBlob(t, rt.name, got.Blob)
			if got.MimeType != "application/gzip" || got.Updated != "demo://resource/static/document/architecture.md" {
				t.Errorf("mimeType %q, update of %q", got.MimeType, got.Updated)
			}
			testenv.WaitFor(t, "no child subscription", func() bool { return d.Broker.ChildSubscriptions() == 0 })
		})
	}
}
