package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// The aggregate endpoint names each tool and prompt `<server>__<name>`: the
// server's name, two underscores, the child's name. Every major client
// accepts a name that matches ^[a-zA-Z0-9_-]{1,64}$ (the OpenAI and
// Anthropic function-name rules; MCP itself allows more), so a name that
// does not fit is rewritten: each other character becomes "_", the child's
// part is cut to fit, and "_" and eight hex digits of the SHA-256 of the
// child's own name are appended, which keeps two rewritten names apart.
// A server's prefix is never a prefix of another's (config.Check refuses
// two servers where one's name followed by "__" begins the other's), so
// names of different servers never meet.

// Separator joins a server's name and its tool's or prompt's.
const Separator = "__"

// Name is the aggregate endpoint's own name (its serverInfo's): the server
// a client of /mcp calls code mode's tools on.
const Name = "mcpx"

// MaxNameLen is the longest name the aggregate endpoint lists.
const MaxNameLen = 64

// hashLen is how many hex digits of the name's hash a rewritten name ends with.
const hashLen = 8

// AggregateName is the name the aggregate endpoint lists server's tool or
// prompt name under.
func AggregateName(server, name string) string {
	full := server + Separator + name
	if len(full) <= MaxNameLen && fits(full) {
		return full
	}
	var b strings.Builder
	for _, r := range name {
		if r < 0x80 && fits(string(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	clean := b.String()
	room := MaxNameLen - len(server) - len(Separator) - 1 - hashLen
	if room < 0 {
		room = 0
	}
	if len(clean) > room {
		clean = clean[:room]
	}
	sum := sha256.Sum256([]byte(name))
	return server + Separator + clean + "_" + hex.EncodeToString(sum[:])[:hashLen]
}

// fits reports whether s holds only [a-zA-Z0-9_-].
func fits(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return s != ""
}

// serverOf finds, among servers, the one whose prefix name carries; "" if
// none does. At most one can (see the package comment).
func serverOf(name string, servers []string) string {
	for _, s := range servers {
		if strings.HasPrefix(name, s+Separator) {
			return s
		}
	}
	return ""
}
