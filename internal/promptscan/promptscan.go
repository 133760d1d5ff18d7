// Package promptscan flags text aimed at a language model rather than at
// the person reading a tool's description: the marks of a tool-poisoning
// attack, where a server hides instructions for the model in a tool's
// description or its schemas.
//
//	flags := promptscan.Scan(description) // e.g. ["hidden-tag", "sensitive-file"]
//
// It is a short list of patterns, no more. It catches the published
// examples and careless attacks; it cannot catch an instruction phrased
// in plain words, in another language, split across fields, or encoded in
// a way the list does not name, and it can flag an honest description
// that happens to match. A flag is a reason for a person to read the
// description, never a verdict.
package promptscan

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// The rules, by the name Scan reports.
const (
	// HiddenTag: a tag that frames text as instructions for the model:
	// <IMPORTANT>, <system>, <instructions>, <secret>, <hidden> and the
	// like, in any case.
	HiddenTag = "hidden-tag"
	// HTMLComment: an HTML comment, which a rendered description hides
	// from the person and shows to the model.
	HTMLComment = "html-comment"
	// Invisible: a zero-width, bidirectional-control or Unicode tag
	// character (U+200B–U+200F, U+202A–U+202E, U+2060–U+2064,
	// U+2066–U+2069, U+FEFF, U+E0000–U+E007F): text a person does not see.
	Invisible = "invisible-character"
	// EncodedBlob: a run of 64 or more base64-alphabet characters, which
	// can carry an instruction past a reader.
	EncodedBlob = "encoded-blob"
	// Override: "ignore previous instructions", "disregard the above",
	// "you are now", "new instructions:" and the like.
	Override = "override-instructions"
	// Conceal: asking the model to keep something from the user: "do not
	// tell the user", "without informing the user", "secretly".
	Conceal = "conceal-from-user"
	// SensitiveFile: naming a credential file: ~/.ssh, id_rsa,
	// id_ed25519, .aws/credentials, .netrc, .gnupg, /etc/shadow,
	// /etc/passwd, mcp.json.
	SensitiveFile = "sensitive-file"
	// ToolChaining: telling the model to call another tool or read a file
	// first and pass what it got as an argument ("before using this tool,
	// read ... and pass ...").
	ToolChaining = "tool-chaining"
)

// patterns are compiled on first use: a process that scans nothing (the
// sandbox's helper, most CLI commands) does not pay for them.
var patterns = sync.OnceValue(func() []pattern {
	return []pattern{
		{HiddenTag, regexp.MustCompile(`(?i)<\s*/?\s*(important|system|instructions?|secret|hidden|admin|assistant|context|prompt)\b[^>]{0,40}>`)},
		{HTMLComment, regexp.MustCompile(`<!--`)},
		{EncodedBlob, regexp.MustCompile(`[A-Za-z0-9+/_-]{64,}={0,2}`)},
		{Override, regexp.MustCompile(`(?i)\b(ignore|disregard|forget|override)\s+(all\s+|any\s+)?(the\s+|your\s+)?(previous|prior|above|earlier|preceding|other|system)\s+(instructions?|prompts?|rules|messages?|directions?)|\byou\s+are\s+now\b|\bnew\s+instructions\s*:|\bsystem\s+prompt\b`)},
		{Conceal, regexp.MustCompile(`(?i)\b(do\s+not|don't|never)\s+(tell|inform|mention|reveal|show|notify|alert)\b[^.]{0,80}\buser\b|\bwithout\s+(telling|informing|notifying|alerting|asking)\s+(the\s+)?user\b|\b(secretly|covertly|silently)\b`)},
		{SensitiveFile, regexp.MustCompile(`(?i)(~|\$HOME|/home/[^/\s]+|/root)?/?\.ssh\b|\bid_(rsa|ed25519|ecdsa|dsa)\b|\.aws/credentials|\.netrc\b|\.gnupg\b|/etc/(shadow|passwd)\b|\bmcp\.json\b`)},
		{ToolChaining, regexp.MustCompile(`(?i)\bbefore\s+(using|calling|invoking|running)\s+(this|the|any)\b[^\n]{0,80}\b(read|call|invoke|fetch)\b[^\n]{0,120}\b(pass|send|include|put)\b`)},
	}
})

type pattern struct {
	rule string
	re   *regexp.Regexp
}

// Scan returns the rules text breaks, sorted, each once; nil for none.
func Scan(text string) []string {
	var out []string
	if hasInvisible(text) {
		out = append(out, Invisible)
	}
	for _, p := range patterns() {
		if p.re.MatchString(text) {
			out = append(out, p.rule)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Merge adds the rules of more to flags, keeping them sorted and once.
func Merge(flags []string, more ...string) []string {
	out := append(slices.Clip(flags), more...)
	slices.Sort(out)
	return slices.Compact(out)
}

func hasInvisible(s string) bool {
	for _, r := range s {
		if invisible(r) {
			return true
		}
	}
	return false
}

func invisible(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E,
		r >= 0x2060 && r <= 0x2064, r >= 0x2066 && r <= 0x2069,
		r == 0xFEFF, r >= 0xE0000 && r <= 0xE007F:
		return true
	}
	return false
}

// Visible is s with each invisible character written as <U+XXXX>, so that
// a diff or a terminal shows what a person would not see.
func Visible(s string) string {
	if !hasInvisible(s) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if invisible(r) || r == utf8.RuneError {
			fmt.Fprintf(&b, "<U+%04X>", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
