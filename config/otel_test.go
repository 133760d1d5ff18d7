package config

import (
	"strings"
	"testing"
)

// The otel block: off without it, on with it (even {}), each bad field
// named with its fix.
func TestOTel(t *testing.T) {
	for _, tc := range []struct {
		doc string
		on  bool
		err string
	}{
		{`{"servers": {}}`, false, ""},
		{`{"servers": {}, "otel": {}}`, true, ""},
		{`{"servers": {}, "otel": {"endpoint": "http://127.0.0.1:4318", "protocol": "http/protobuf", "headers": {"x-key": "k"}, "sample": 0.25}}`, true, ""},
		{`{"servers": {}, "otel": {"endpoint": "https://otel.example.org", "protocol": "grpc"}}`, true, ""},
		{`{"servers": {}, "otel": {"endpoint": "localhost:4318"}}`, false, `"localhost:4318" is not an absolute http(s) URL (field otel.endpoint); give the collector's base URL`},
		{`{"servers": {}, "otel": {"protocol": "http/json"}}`, false, `unknown protocol "http/json" (field otel.protocol); use "http/protobuf" or "grpc"`},
		{`{"servers": {}, "otel": {"sample": 1.5}}`, false, "otel.sample"},
		{`{"servers": {}, "otel": {"sample": "all"}}`, false, "want a number from 0 to 1, got string (field otel.sample)"},
		{`{"servers": {}, "otel": {"headers": {"x": 1}}}`, false, "otel.headers"},
		{`{"servers": {}, "otel": {"endpiont": "http://127.0.0.1:4318"}}`, false, `did you mean "endpoint"`},
		{`{"servers": {}, "otel": true}`, false, "otel must be an object"},
		{`{"servers": {}, "otle": {}}`, false, `did you mean "otel"`},
	} {
		cfg, err := Parse([]byte(tc.doc), "t.json")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one saying %q", tc.doc, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.doc, err)
			continue
		}
		if cfg.OTel.On != tc.on {
			t.Errorf("%s: On = %v, want %v", tc.doc, cfg.OTel.On, tc.on)
		}
	}
}
