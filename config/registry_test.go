package config

import (
	"strings"
	"testing"
)

func TestRegistryURL(t *testing.T) {
	for _, tc := range []struct {
		doc, want, err string
	}{
		{`{"servers": {}}`, DefaultRegistryURL, ""},
		{`{"servers": {}, "registry": {"url": "https://reg.example.org/"}}`, "https://reg.example.org", ""},
		{`{"servers": {}, "registry": {"url": "http://127.0.0.1:8080"}}`, "http://127.0.0.1:8080", ""},
		{`{"servers": {}, "registry": {"url": "http://reg.example.org"}}`, "", "registry.url"},
		{`{"servers": {}, "registry": {"url": "reg.example.org"}}`, "", "not an absolute http(s) URL"},
		{`{"servers": {}, "registry": {"url": "https://reg.example.org?x=1"}}`, "", "has a query"},
		{`{"servers": {}, "registry": {"ulr": "https://reg.example.org"}}`, "", `did you mean "url"`},
		{`{"servers": {}, "registry": "https://reg.example.org"}`, "", "registry must be an object"},
		{`{"servers": {}, "regsitry": {}}`, "", `did you mean "registry"`},
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
		if got := cfg.Registry.BaseURL(); got != tc.want {
			t.Errorf("%s: BaseURL %q, want %q", tc.doc, got, tc.want)
		}
	}
}
