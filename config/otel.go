package config

import (
	"encoding/json"
	"fmt"
	"net/url"
)

// OTel configures OpenTelemetry traces (package tracing): spans of every
// API and MCP request and of the call path below it, exported over OTLP.
// Off unless the config has an "otel" block; a zero field falls back to
// the standard OTEL_EXPORTER_OTLP_* variable, which the exporter reads.
type OTel struct {
	// Endpoint is the collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT
	// ("http://localhost:4318"; http/protobuf sends to its /v1/traces).
	Endpoint string `json:"endpoint,omitempty"`
	// Protocol is "http/protobuf" (the default) or "grpc".
	Protocol string `json:"protocol,omitempty"`
	// Headers are sent with every export (a collector's API key).
	Headers map[string]string `json:"headers,omitempty"`
	// Sample is the fraction of new traces recorded, 0 to 1; nil = 1. A
	// caller's traceparent decides for the traces it continues.
	Sample *float64 `json:"sample,omitempty"`
	// On is set when the config has an "otel" block (even {}, which
	// takes everything from the environment).
	On bool `json:"-"`
}

func (p *problems) decodeOTel(o *OTel, raw json.RawMessage) {
	if isNull(raw) {
		return
	}
	members, err := objectMembers(raw)
	if err != nil {
		p.add("", "otel", "otel must be an object", `such as {"endpoint": "http://localhost:4318"}`)
		return
	}
	o.On = true
	fields := map[string]fieldSpec{
		"endpoint": {&o.Endpoint, "a string (the collector's base URL)"},
		"protocol": {&o.Protocol, `a string ("http/protobuf" or "grpc")`},
		"headers":  {&o.Headers, "an object of strings"},
		"sample":   {&o.Sample, "a number from 0 to 1"},
	}
	p.decodeFields("", "otel.", members, fields, map[string]bool{})
}

// checkOTel checks the otel block: an absolute http(s) endpoint, a
// protocol mcpx speaks, a sample fraction.
func (p *problems) checkOTel(o *OTel) {
	if o.Endpoint != "" {
		u, err := url.Parse(o.Endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			p.add("", "otel.endpoint", fmt.Sprintf("%q is not an absolute http(s) URL", o.Endpoint),
				`give the collector's base URL, such as "http://localhost:4318" (http/protobuf) or "http://localhost:4317" (grpc)`)
		}
	}
	switch o.Protocol {
	case "", "http/protobuf", "grpc":
	default:
		p.add("", "otel.protocol", fmt.Sprintf("unknown protocol %q", o.Protocol), `use "http/protobuf" or "grpc"`)
	}
	if o.Sample != nil && (*o.Sample < 0 || *o.Sample > 1) {
		p.add("", "otel.sample", fmt.Sprintf("sample %v is not a fraction from 0 to 1", *o.Sample), "1 records every trace, 0.1 one in ten; remove it for 1")
	}
}
