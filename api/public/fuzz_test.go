package public_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"mcpx.dev/mcpx/api/public"
	"mcpx.dev/mcpx/auth/access"
)

// FuzzEndpoints: whatever a client sends to the token, registration,
// authorization and revocation endpoints, the face answers without a
// server error, issues no token, and never redirects to an address no
// client registered.
func FuzzEndpoints(f *testing.F) {
	st, err := access.Open(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	face, err := public.New(public.Options{URL: origin, Tokens: st, Limit: public.Limit{Rate: 1e9, Burst: 1 << 30}})
	if err != nil {
		f.Fatal(err)
	}
	c, err := st.Register("fuzz", []string{redirect})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("POST", public.TokenPath, "grant_type=authorization_code&code=x&code_verifier=y&client_id="+c.ID)
	f.Add("POST", public.TokenPath, "grant_type=refresh_token&refresh_token=mcpxat_x&client_id="+c.ID)
	f.Add("POST", public.RegisterPath, `{"redirect_uris":["https://a.example/cb"],"client_name":"x"}`)
	f.Add("GET", public.AuthorizePath+"?response_type=code&client_id="+c.ID+"&redirect_uri="+redirect+"&code_challenge=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa&code_challenge_method=S256", "")
	f.Add("POST", public.RevokePath, "token=mcpxat_abc")
	f.Add("GET", public.PRMPath+"/mcp/x", "")
	f.Fuzz(func(t *testing.T, method, target, body string) {
		if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \r\n\t#") || (method != "GET" && method != "POST") {
			return
		}
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return // no HTTP server would hand the face this request
		}
		if public.IsCIMD(u.Query().Get("client_id")) {
			return // a metadata document's URL: fetched from the network (FuzzCIMDDocument fuzzes the document)
		}
		req := httptest.NewRequest(method, "http://mcpx.example"+target, strings.NewReader(body))
		if strings.HasPrefix(body, "{") {
			req.Header.Set("Content-Type", "application/json")
		} else {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		w := httptest.NewRecorder()
		face.ServeHTTP(w, req)
		switch {
		case w.Code >= 500:
			t.Fatalf("%s %s %q: %d %s", method, target, body, w.Code, w.Body)
		case strings.Contains(w.Body.String(), `"access_token"`):
			t.Fatalf("%s %s %q issued a token: %s", method, target, body, w.Body)
		case w.Code == http.StatusFound && !strings.HasPrefix(w.Header().Get("Location"), redirect):
			t.Fatalf("%s %s %q redirected to %q", method, target, body, w.Header().Get("Location"))
		}
	})
}

// TestRateLimited: past its burst, an address is answered 429 on every
// OAuth path, and on /mcp once its refused tokens used up its allowance.
func TestRateLimited(t *testing.T) {
	t.Parallel()
	st, err := access.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	face, err := public.New(public.Options{URL: origin, Tokens: st, Limit: public.Limit{Rate: 0.001, Burst: 3}})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{public.ASMetadataPath, public.TokenPath, public.RegisterPath, public.AuthorizePath, public.RevokePath, public.PRMPath} {
		codes := []int{}
		for range 5 {
			req := httptest.NewRequest("POST", "http://mcpx.example"+path, strings.NewReader(""))
			req.RemoteAddr = "192.0.2.1:1234"
			w := httptest.NewRecorder()
			face.ServeHTTP(w, req)
			codes = append(codes, w.Code)
		}
		if codes[0] == 429 && path == public.ASMetadataPath || codes[4] != 429 {
			t.Errorf("%s: %v, want 429 past the burst", path, codes)
		}
	}
	var last error
	for range 5 {
		req := httptest.NewRequest("POST", "http://mcpx.example/mcp", nil)
		req.RemoteAddr = "192.0.2.2:1234"
		req.Header.Set("Authorization", "Bearer mcpxat_guess")
		_, last = face.Authenticate(req, "")
	}
	var rf *public.Refusal
	if !errorsAs(last, &rf) || rf.Status != 429 {
		t.Fatalf("guessing tokens: %v, want 429", last)
	}
}

func errorsAs(err error, rf **public.Refusal) bool {
	r, ok := err.(*public.Refusal)
	*rf = r
	return ok
}
