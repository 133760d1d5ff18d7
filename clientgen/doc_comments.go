package clientgen

import (
	"strings"

	"mcpx.dev/mcpx/internal/orderedjson"
)

// schemaDoc returns the JSDoc text of a schema: title, description, and the
// format, default and deprecated annotations as tags.
func schemaDoc(s any) string {
	o, ok := s.(*object)
	if !ok {
		return ""
	}
	var parts, tags []string
	title, _ := o.Str("title")
	desc, _ := o.Str("description")
	if title != "" {
		parts = append(parts, title)
	}
	if desc != "" && desc != title {
		parts = append(parts, desc)
	}
	if f, ok := o.Str("format"); ok && f != "" {
		tags = append(tags, "@format "+f)
	}
	if d, ok := o.Get("default"); ok {
		tags = append(tags, "@default "+orderedjson.Compact(d))
	}
	if d, _ := o.Get("deprecated"); d == true {
		tags = append(tags, "@deprecated")
	}
	if len(tags) > 0 {
		parts = append(parts, strings.Join(tags, "\n"))
	}
	return strings.Join(parts, "\n\n")
}

// jsdoc writes text as a JSDoc comment indented by ind; "" for no text.
func jsdoc(text, ind string) string {
	text = strings.TrimSpace(strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(text))
	if text == "" {
		return ""
	}
	lines := strings.Split(escapeComment(text), "\n")
	if len(lines) == 1 {
		return ind + "/** " + lines[0] + " */\n"
	}
	var b strings.Builder
	b.WriteString(ind + "/**\n")
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			b.WriteString(ind + " *\n")
			continue
		}
		b.WriteString(ind + " * " + l + "\n")
	}
	b.WriteString(ind + " */\n")
	return b.String()
}

// commentText makes s safe inside a one-line /* */ comment.
func commentText(s string) string {
	return escapeComment(strings.Join(strings.Fields(s), " "))
}

// escapeComment keeps "*/" in s from ending the comment it is written in.
func escapeComment(s string) string {
	return strings.ReplaceAll(s, "*/", "*\\/")
}
