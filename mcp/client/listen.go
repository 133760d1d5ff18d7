package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// ListenResource subscribes to uri's updates the stateless era's way
// (2026-07-28, SEP-2575, which removed resources/subscribe): a
// subscriptions/listen request naming the resource, held open until stop
// is called or the session ends. The child's notifications/resources/
// updated arrive through Options.OnNotify, as a handshake-era child's do.
// It returns once the child acknowledged the subscription; an error if it
// did not agree to it (its acknowledgement left the uri out, or the
// request ended at once) or ctx ended first. The held request is not
// counted in flight: it must not keep the instance from idling out or
// hold a drain.
func (s *Session) ListenResource(ctx context.Context, uri string) (stop func(), err error) {
	params, err := json.Marshal(map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{uri}}})
	if err != nil {
		return nil, err
	}
	acked := make(chan struct{})
	s.mu.Lock()
	if s.listenAcks == nil {
		s.listenAcks = map[string]chan struct{}{}
	}
	if s.listenAcks[uri] != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("subscribing to %s: a subscription is being made already", uri)
	}
	s.listenAcks[uri] = acked
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listenAcks, uri)
		s.mu.Unlock()
	}()

	lctx, cancel := context.WithCancel(context.WithValue(s.ctx, uncountedKey{}, true))
	ended := make(chan error, 1)
	s.replies.Add(1)
	go func() {
		defer s.replies.Done()
		_, err := s.request(lctx, jsonrpc.MethodListen, params, nil, true)
		ended <- err
	}()
	select {
	case <-acked:
		return cancel, nil
	case err := <-ended:
		cancel()
		if err == nil {
			err = errors.New("the server did not agree to the subscription")
		}
		return nil, fmt.Errorf("subscribing to %s: %w", uri, err)
	case <-ctx.Done():
		cancel()
		return nil, fmt.Errorf("subscribing to %s: %w", uri, ctx.Err())
	}
}

// listenAcked hands a notifications/subscriptions/acknowledged to the
// ListenResource waiting for each resource it agreed to.
func (s *Session) listenAcked(params []byte) {
	var p struct {
		Notifications struct {
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, uri := range p.Notifications.ResourceSubscriptions {
		if ch := s.listenAcks[uri]; ch != nil {
			close(ch)
			delete(s.listenAcks, uri)
		}
	}
}
