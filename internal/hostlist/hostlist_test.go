package hostlist_test

import (
	"errors"
	"strings"
	"testing"

	"mcpx.dev/mcpx/internal/hostlist"
)

func TestAllows(t *testing.T) {
	allow, err := hostlist.Parse([]string{
		"api.github.com",
		"*.npmjs.org",
		"Registry.Local.:4873",
		"registry.local:4874", // a second port for the same host
		"203.0.113.7",
		"[2001:db8::7]:8443",
		"::1",
		"*.deep.example.com:8080",
		"*.deep.example.com:8081",
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		port int
		want string // "" = allowed, else a part of the refusal's Why
	}{
		{"api.github.com", 443, ""},
		{"api.github.com", 80, ""},
		{"API.GitHub.com.", 443, ""}, // case and a trailing dot
		{"api.github.com", 22, "port not allowed for this host (allowed: 443, 80)"},
		{"github.com", 443, "not in the allowlist"},
		{"evil-api.github.com", 443, "not in the allowlist"},
		{"api.github.com.evil.test", 443, "not in the allowlist"},
		{"registry.npmjs.org", 443, ""},
		{"a.b.npmjs.org", 443, ""},
		{"npmjs.org", 443, "not in the allowlist"},     // the apex is not a match
		{"evilnpmjs.org", 443, "not in the allowlist"}, // whole labels only
		{"registry.npmjs.org", 8443, "port not allowed for this host (allowed: 443, 80)"},
		{"registry.local", 4873, ""},
		{"registry.local", 4874, ""},
		{"registry.local", 443, "allowed: 4873, 4874"},
		{"x.deep.example.com", 8081, ""},
		{"x.deep.example.com", 443, "allowed: 8080, 8081"},
		{"203.0.113.7", 443, ""},
		{"203.0.113.7", 8443, "port not allowed for this address"},
		{"::ffff:203.0.113.7", 80, ""}, // the same address, IPv4-mapped
		{"203.0.113.8", 443, "IP address not in the allowlist"},
		{"2001:db8::7", 8443, ""},
		{"[2001:db8::7]", 8443, ""},
		{"2001:db8::7", 443, "port not allowed"},
		{"::1", 443, ""},
		{"127.0.0.1", 443, "IP address not in the allowlist"},
		{"fe80::1%eth0", 443, "zone"},
		{"127.1", 443, "not a host name"},      // read as 127.0.0.1 by some resolvers
		{"2130706433", 443, "not a host name"}, // and this
		{"0x7f.0x1", 443, "not a host name"},   // and this
		{"api.github.com", 0, "port"},          // no port
		{"bücher.example", 443, "punycode"},    // an IDN must come as xn--
		{"api.github.com/x", 443, "not allowed in a host name"},
		{"", 443, "empty host name"},
	}
	for _, tt := range tests {
		err := allow.Allows(tt.host, tt.port)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Allows(%q, %d) = %v, want allowed", tt.host, tt.port, err)
		case tt.want != "" && err == nil:
			t.Errorf("Allows(%q, %d) allowed, want a refusal saying %q", tt.host, tt.port, tt.want)
		case tt.want != "":
			var ref *hostlist.Refusal
			if !errors.As(err, &ref) || !strings.Contains(ref.Why, tt.want) {
				t.Errorf("Allows(%q, %d) = %v, want a *Refusal saying %q", tt.host, tt.port, err, tt.want)
			}
		}
	}
}

func TestParseAllowErrors(t *testing.T) {
	tests := []struct {
		entry, want string
	}{
		{"", "empty entry"},
		{"*", `"*" alone would allow every host`},
		{"https://api.github.com/repos", `name the host, not a URL: "api.github.com"`},
		{"api.github.com/repos", "no path"},
		{"user@api.github.com", "no path, query, user"},
		{"api.*.com", "whole labels at the left only"},
		{"*api.github.com", "whole labels at the left only"},
		{"*.*.github.com", "whole labels at the left only"},
		{"*.com", `name the domain, as in "*.example.com"`},
		{"api.github.com:0", "port \"0\" is not a number from 1 to 65535"},
		{"api.github.com:https", "not a number"},
		{"api.github.com:70000", "not a number"},
		{"2001:db8::1:443:x", "not host or host:port"},
		{"[api.github.com]:443", "only IPv6 addresses go in brackets"},
		{"fe80::1%eth0", "zone"},
		{"bücher.example", "punycode"},
		{"under score.example", "no path, query, user or spaces"},
		{"a..b", "1 to 63 characters"},
		{strings.Repeat("a", 64) + ".example", "1 to 63 characters"},
		{"10.1", "not a host name"},
	}
	for _, tt := range tests {
		_, err := hostlist.Parse([]string{"ok.example", tt.entry})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "allow[1]") {
			t.Errorf("ParseAllow(%q) = %v, want an error naming allow[1] and saying %q", tt.entry, err, tt.want)
		}
	}
	_, err := hostlist.Parse([]string{"*", "ok.example", "x/y"})
	if err == nil || !strings.Contains(err.Error(), "allow[0]") || !strings.Contains(err.Error(), "allow[2]") {
		t.Errorf("ParseAllow with two bad entries = %v, want both named", err)
	}
}

// FuzzAllows: no input panics, and a pattern never matches its apex nor a
// name that is not under it.
func FuzzAllows(f *testing.F) {
	f.Add("*.npmjs.org", "registry.npmjs.org", 443)
	f.Add("api.github.com:8443", "API.github.com.", 8443)
	f.Add("[::1]:80", "::1", 80)
	f.Add("127.0.0.1", "127.1", 443)
	f.Fuzz(func(t *testing.T, entry, host string, port int) {
		allow, err := hostlist.Parse([]string{entry})
		if err != nil {
			return
		}
		if allow.Allows(host, port) != nil {
			return
		}
		if suffix, ok := strings.CutPrefix(entry, "*."); ok {
			suffix, _, _ = strings.Cut(suffix, ":")
			h := strings.TrimSuffix(strings.ToLower(host), ".")
			if !strings.HasSuffix(h, "."+strings.ToLower(strings.TrimSuffix(suffix, "."))) {
				t.Errorf("%q allows %q, which is not under it", entry, host)
			}
		}
	})
}
