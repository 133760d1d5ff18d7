package config

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Webhook is one receiver of the daemon's lifecycle events (package
// webhook): each event of a kind in Events is POSTed to URL as JSON,
// signed with Secret (docs/observability.md, "Webhooks"). The daemon reads
// them at start; a reload that changes them takes effect at the next start.
type Webhook struct {
	// URL is https, or http to a loopback address: events name servers,
	// keys and reasons, which must not cross a network in the clear.
	URL string `json:"url"`
	// Events are the lifecycle event kinds sent (WebhookEvents); empty =
	// every kind.
	Events []string `json:"events,omitempty"`
	// Secret is the HMAC-SHA256 key of the signature, written out or as
	// ${env:NAME}, the daemon's variable NAME (read at the daemon's
	// start). Required: a receiver must be able to tell mcpx's events
	// from anyone's.
	Secret string `json:"secret"`
}

// WebhookEvents are the event kinds a webhook may ask for: the lifecycle
// events of /v1/events, and tool-changed (a pinned tool's definition
// changed).
var WebhookEvents = []string{"spawn", "ready", "restart", "evict", "reap", "crash", "exit", "reload",
	"reload-refused", "upgrade", "backoff", "wedged", "tool-changed", "tool-flagged",
	"auth-required", "auth-signed-in", "auth-refreshed", "auth-failed"}

// envRef is a whole ${env:NAME} value.
var envRef = regexp.MustCompile(`^\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}$`)

// SecretEnv is the variable a secret names as ${env:NAME}; "" for a
// secret written out.
func (w Webhook) SecretEnv() string {
	if m := envRef.FindStringSubmatch(w.Secret); m != nil {
		return m[1]
	}
	return ""
}

func (p *problems) decodeWebhooks(hooks *[]Webhook, raw json.RawMessage) {
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		p.add("", "webhooks", "webhooks must be an array", `such as [{"url": "https://hooks.example.com/mcpx", "events": ["crash", "wedged"], "secret": "${env:MCPX_WEBHOOK_SECRET}"}]`)
		return
	}
	for i, e := range elems {
		field := fmt.Sprintf("webhooks[%d]", i)
		members, err := objectMembers(e)
		if err != nil {
			p.add("", field, "a webhook must be an object", `such as {"url": "https://hooks.example.com/mcpx", "secret": "${env:MCPX_WEBHOOK_SECRET}"}`)
			continue
		}
		var w Webhook
		p.decodeFields("", field+".", members, map[string]fieldSpec{
			"url":    {&w.URL, "a string"},
			"events": {&w.Events, "an array of event kinds"},
			"secret": {&w.Secret, "a string"},
		}, map[string]bool{})
		p.checkWebhook(field, &w)
		*hooks = append(*hooks, w)
	}
}

func (p *problems) checkWebhook(field string, w *Webhook) {
	u, err := url.Parse(w.URL)
	switch {
	case w.URL == "":
		p.add("", field+".url", "a webhook needs a url", `such as "https://hooks.example.com/mcpx"`)
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		p.add("", field+".url", fmt.Sprintf("url %q is not an http(s) URL", w.URL), `such as "https://hooks.example.com/mcpx"`)
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		p.add("", field+".url", fmt.Sprintf("url %q sends events in the clear over the network", w.URL),
			"use https, or http only to a loopback address (127.0.0.1, ::1, localhost)")
	case u.User != nil:
		p.add("", field+".url", "the url holds credentials", "drop the user:password part; the secret signs each event")
	}
	for j, k := range w.Events {
		if !slices.Contains(WebhookEvents, k) {
			p.add("", fmt.Sprintf("%s.events[%d]", field, j), fmt.Sprintf("unknown event kind %q", k), hintFor(k, WebhookEvents, "event kinds"))
		}
	}
	switch {
	case w.Secret == "":
		p.add("", field+".secret", "a webhook needs a secret to sign its events", `set one, such as "${env:MCPX_WEBHOOK_SECRET}"`)
	case strings.Contains(w.Secret, "${") && w.SecretEnv() == "":
		p.add("", field+".secret", "the secret holds a placeholder other than a whole ${env:NAME}", `write it out, or use "${env:NAME}" alone`)
	}
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
