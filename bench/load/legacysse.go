package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"mcpx.dev/mcpx/internal/sse"
	"mcpx.dev/mcpx/mcp/client"
)

// legacySSE is the HTTP+SSE transport of MCP 2024-11-05 as an
// client.Transport, for the endpoints that speak only it (mcp-hub): GET
// the endpoint opens an event stream whose first event, "endpoint", names
// the URL to POST messages to; every message from the server, answers
// included, is a "message" event on that stream.
type legacySSE struct {
	hc     *http.Client
	header map[string]string
	post   string // the endpoint event's URL
	body   io.ReadCloser
	dec    *sse.Decoder
	cancel context.CancelFunc // ends the stream

	closeOnce sync.Once
}

var _ client.Transport = (*legacySSE)(nil)

// maxSSEEvent bounds one event from the server.
const maxSSEEvent = 8 << 20

// dialLegacySSE opens the stream and waits for its endpoint event; ctx
// bounds only that, the stream lives until Close.
func dialLegacySSE(ctx context.Context, endpoint string, header map[string]string, hc *http.Client) (*legacySSE, error) {
	base, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, cancel) // until the endpoint event
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, endpoint, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	t := &legacySSE{hc: hc, header: header, body: resp.Body, cancel: cancel,
		dec: sse.NewDecoder(bufio.NewReaderSize(resp.Body, 64<<10), maxSSEEvent)}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		t.Close()
		return nil, fmt.Errorf("GET %s: %s: %s", endpoint, resp.Status, msg)
	}
	ev, err := t.dec.Next()
	if err == nil && ev.Event != "endpoint" {
		err = fmt.Errorf("first event is %q, not endpoint", ev.Event)
	}
	var post *url.URL
	if err == nil {
		post, err = base.Parse(string(bytes.TrimSpace(ev.Data)))
	}
	if !stop() || err != nil {
		t.Close()
		return nil, errors.Join(fmt.Errorf("no endpoint event from %s", endpoint), err, ctx.Err())
	}
	t.post = post.String()
	return t, nil
}

// Send POSTs msg; the server accepts it (202) and answers on the stream.
func (t *legacySSE) Send(ctx context.Context, msg []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.post, bytes.NewReader(msg))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range t.header {
		req.Header.Set(k, v)
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s: %s", t.post, resp.Status, body)
	}
	return nil
}

// Recv returns the next message event's data.
func (t *legacySSE) Recv() ([]byte, error) {
	for {
		ev, err := t.dec.Next()
		if err != nil {
			return nil, err
		}
		if ev.Event == "" || ev.Event == "message" {
			return ev.Data, nil
		}
	}
}

// Close ends the stream, which ends the server's session.
func (t *legacySSE) Close() error {
	t.closeOnce.Do(func() {
		t.cancel()
		t.body.Close()
	})
	return nil
}
