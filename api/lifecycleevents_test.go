package api_test

import (
	"bufio"
	"errors"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/sse"
	"mcpx.dev/mcpx/internal/testing/apitest"
	"mcpx.dev/mcpx/pool"
	"mcpx.dev/mcpx/wire"
)

// TestEventsGapAndResume: GET /v1/events?follow=false streams the kept
// events with their ids; a Last-Event-ID older than the buffer first gets
// a gap event counting the lost ones, then every kept event; a bad
// Last-Event-ID is a 400.
func TestEventsGapAndResume(t *testing.T) {
	d := apitest.Start(t, apitest.Options{})
	for range pool.DefaultEventBuffer + 10 {
		d.Broker.ReloadRefused("test", errors.New("a config that does not load"))
	}
	read := func(lastID string) []sse.Event {
		t.Helper()
		var h []string
		if lastID != "" {
			h = []string{"Last-Event-ID", lastID}
		}
		r := d.Unix.Do(t, "GET", "/v1/events?follow=false", "", h...)
		if r.StatusCode != 200 {
			t.Fatalf("GET /v1/events: %d %s", r.StatusCode, r.Bytes)
		}
		dec := sse.NewDecoder(bufio.NewReader(strings.NewReader(string(r.Bytes))), 1<<20)
		var evs []sse.Event
		for {
			ev, err := dec.Next()
			if err != nil {
				return evs
			}
			evs = append(evs, ev)
		}
	}
	evs := read("5")
	if len(evs) != pool.DefaultEventBuffer+1 || evs[0].Event != wire.EventGap || string(evs[0].Data) != `{"lost":5}` || evs[0].ID != "10" {
		t.Fatalf("resume from 5: %d events, first %+v; want a gap of 5 (ids 6-10) then %d events", len(evs), evs[0], pool.DefaultEventBuffer)
	}
	if evs[1].ID != "11" || evs[1].Event != wire.EventReloadRefused { // 1-10 fell out of the buffer
		t.Errorf("first kept event %+v; want id 11, a refused reload", evs[1])
	}
	if evs := read("1030"); len(evs) != 4 || evs[0].ID != "1031" || evs[3].ID != "1034" {
		t.Errorf("resume from 1030: %+v; want ids 1031-1034", evs)
	}
	if r := d.Unix.Do(t, "GET", "/v1/events?follow=false", "", "Last-Event-ID", "soon"); r.StatusCode != 400 {
		t.Errorf("a bad Last-Event-ID: %d", r.StatusCode)
	}
}
