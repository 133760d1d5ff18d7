package api_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/internal/testing/proctest"
	"mcpx.dev/mcpx/internal/testing/testenv"
)

// TestDashboardRevokesOAuthClients: in headless Chromium, the owner's
// dashboard lists the public face's OAuth client with its two sign-ins'
// tokens, revokes one sign-in, then the client, each after asking; the
// revoked tokens are then refused and cannot refresh.
func TestDashboardRevokesOAuthClients(t *testing.T) {
	browserPath := testenv.Chromium(t)
	node := testenv.Node(t)
	pw := filepath.Dir(testenv.NPMPackageBin(t, "playwright-core"))
	proctest.CheckNoLeaks(t)
	p := startPublic(t)
	c, s1, s2 := p.twoSignIns(t)
	at1, rt1, tok1 := s1.access, s1.refresh, s1.tok
	at2, rt2 := s2.access, s2.refresh
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "browser", "oauth.cjs"))
	cmd.Env = append(os.Environ(), "PLAYWRIGHT_CORE="+pw, "CHROMIUM="+browserPath, "MCPX_URL="+p.TCP.Base, "MCPX_TOKEN="+apitest.Token,
		"MCPX_CLIENT="+c.ID, "MCPX_TOKEN_ID="+tok1.ID, "SHOTS="+artifactsDir(t), proctest.Env(t))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || !strings.Contains(stdout.String(), "PASS") {
		t.Fatalf("the browser script failed (%v):\n%s%s", err, stdout.String(), stderr.String())
	}
	p.checkSignedOut(t, "the sign-in revoked in the dashboard", at1, rt1, c.ID)
	p.checkSignedOut(t, "the client revoked in the dashboard", at2, rt2, c.ID)
}
