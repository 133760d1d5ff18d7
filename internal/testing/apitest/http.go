package apitest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"mcpx.dev/mcpx/wire"
)

// Client makes requests to one listener of a Daemon.
type Client struct {
	// Base is the listener's URL, without a trailing slash.
	Base string
	// HTTP reaches the listener, with its credentials.
	HTTP *http.Client
}

// withToken sends a bearer token with every request that has no
// Authorization header, and the Mcpx-Client header of the browser guard
// with every request that has none.
type withToken struct{ token string }

func (wt withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if r.Header.Get("Authorization") == "" {
		r.Header.Set("Authorization", "Bearer "+wt.token)
	}
	if r.Header.Get(wire.HeaderClient) == "" {
		r.Header.Set(wire.HeaderClient, "api-test")
	}
	return http.DefaultTransport.RoundTrip(r)
}

func unixClient(sock string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	return &Client{Base: "http://mcpx", HTTP: &http.Client{Transport: tr}}
}

// Response is a finished response with its body read.
type Response struct {
	*http.Response
	// Bytes is the body.
	Bytes []byte
}

// Problem is the response's problem+json body, checked to be one.
func (r *Response) Problem(t testing.TB) wire.Problem {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json; body %s", ct, r.Bytes)
	}
	var p wire.Problem
	if err := json.Unmarshal(r.Bytes, &p); err != nil {
		t.Fatalf("decoding problem %s: %v", r.Bytes, err)
	}
	if p.Status != r.StatusCode {
		t.Errorf("problem status %d, response status %d", p.Status, r.StatusCode)
	}
	return p
}

// Decode decodes the JSON body into v.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Bytes, v); err != nil {
		t.Fatalf("decoding %s: %v", r.Bytes, err)
	}
}

// ToolResult is the part of a CallToolResult the tests look at.
type ToolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

// Text is the result's text content, one line per item.
func (tr ToolResult) Text() string {
	var s []string
	for _, c := range tr.Content {
		s = append(s, c.Text)
	}
	return strings.Join(s, "\n")
}

// Result is the response as a tool call's 200 JSON result.
func (r *Response) Result(t testing.TB) ToolResult {
	t.Helper()
	if r.StatusCode != 200 {
		t.Fatalf("status %d: %s", r.StatusCode, r.Bytes)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var res ToolResult
	r.Decode(t, &res)
	return res
}

// Do sends a request; headers come in name, value pairs.
func (c *Client) Do(t testing.TB, method, path, body string, headers ...string) *Response {
	t.Helper()
	return c.DoCtx(t, t.Context(), method, path, body, headers...)
}

// DoCtx is Do under ctx.
func (c *Client) DoCtx(t testing.TB, ctx context.Context, method, path, body string, headers ...string) *Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return &Response{resp, b}
}

// Mint mints a signed token through c (POST /v1/tokens).
func Mint(t testing.TB, c *Client, req wire.TokenRequest) wire.MintedToken {
	t.Helper()
	b, _ := json.Marshal(req)
	r := c.Do(t, "POST", "/v1/tokens", string(b))
	if r.StatusCode != 200 {
		t.Fatalf("mint %+v: %d %s", req, r.StatusCode, r.Bytes)
	}
	var m wire.MintedToken
	r.Decode(t, &m)
	return m
}

// Event is one event of an API event stream.
type Event struct{ Name, Data string }

// ReadEvents calls each with every event of the stream r until it ends.
func ReadEvents(t testing.TB, r io.Reader, each func(Event)) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	var ev Event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev != (Event{}) { // a comment alone (keep-alive) is no event
				each(ev)
			}
			ev = Event{}
		case strings.HasPrefix(line, "event: "):
			ev.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.Data += strings.TrimPrefix(line, "data: ")
		}
	}
}
