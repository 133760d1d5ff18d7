package scripts

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
)

// mapComment starts the bundle's inline source map.
const mapComment = "//# sourceMappingURL=data:application/json;base64,"

// remapEntry rewrites the inline source map of the bundle at path so that
// the entry module's lines (esbuild's source entrySource) name where they
// came from (e.lines): the script's own line, the Nth prefix or suffix
// line (prefixSource, suffixSource), or nothing for mcpx's own lines.
// Columns are esbuild's: the lines are only renumbered.
func remapEntry(path, entrySource string, e entry) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(b)
	at := strings.LastIndex(text, mapComment)
	if at < 0 {
		return errors.New("the bundle has no inline source map")
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text[at+len(mapComment):]))
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	var sources []string
	for _, s := range m["sources"].([]any) {
		sources = append(sources, s.(string))
	}
	entryIdx := slices.Index(sources, entrySource)
	if entryIdx < 0 {
		return nil // the entry left nothing in the bundle
	}
	idx := map[string]int{"": entryIdx}
	for _, s := range []string{prefixSource, suffixSource} {
		idx[s] = len(sources)
		sources = append(sources, s)
	}
	mappings, _ := m["mappings"].(string)
	segs := decodeMappings(mappings)
	for _, line := range segs {
		for i, s := range line {
			if len(s) < 4 || s[1] != entryIdx {
				continue
			}
			o := e.origin(s[2] + 1)
			if o.line == 0 {
				line[i] = s[:1] // unmapped
				continue
			}
			s[1], s[2] = idx[o.source], o.line-1
		}
	}
	m["sources"], m["mappings"] = sources, encodeMappings(segs)
	out, err := json.Marshal(m)
	if err != nil {
		return err
	}
	text = text[:at] + mapComment + base64.StdEncoding.EncodeToString(out) + "\n"
	return os.WriteFile(path, []byte(text), 0o600)
}

const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// decodeMappings decodes a source map's mappings into absolute segments
// per generated line: [column] or [column, source, line, column(, name)].
func decodeMappings(s string) [][][]int {
	var out [][][]int
	var src, line, col, name int
	for _, l := range strings.Split(s, ";") {
		var segs [][]int
		gen := 0
		for _, seg := range strings.Split(l, ",") {
			var v []int
			shift, value := 0, 0
			for _, ch := range seg {
				d := strings.IndexRune(b64, ch)
				value += (d & 31) << shift
				if d&32 != 0 {
					shift += 5
					continue
				}
				if value&1 != 0 {
					v = append(v, -(value >> 1))
				} else {
					v = append(v, value>>1)
				}
				value, shift = 0, 0
			}
			if len(v) == 0 {
				continue
			}
			gen += v[0]
			abs := []int{gen}
			if len(v) >= 4 {
				src, line, col = src+v[1], line+v[2], col+v[3]
				abs = append(abs, src, line, col)
				if len(v) >= 5 {
					name += v[4]
					abs = append(abs, name)
				}
			}
			segs = append(segs, abs)
		}
		out = append(out, segs)
	}
	return out
}

// encodeMappings is decodeMappings' inverse.
func encodeMappings(lines [][][]int) string {
	var sb strings.Builder
	var src, line, col, name int
	for i, segs := range lines {
		if i > 0 {
			sb.WriteByte(';')
		}
		gen := 0
		for j, s := range segs {
			if j > 0 {
				sb.WriteByte(',')
			}
			vlq(&sb, s[0]-gen)
			gen = s[0]
			if len(s) >= 4 {
				vlq(&sb, s[1]-src)
				vlq(&sb, s[2]-line)
				vlq(&sb, s[3]-col)
				src, line, col = s[1], s[2], s[3]
				if len(s) >= 5 {
					vlq(&sb, s[4]-name)
					name = s[4]
				}
			}
		}
	}
	return sb.String()
}

// vlq writes v as a source map's base64 VLQ.
func vlq(sb *strings.Builder, v int) {
	u := v << 1
	if v < 0 {
		u = (-v << 1) | 1
	}
	for {
		d := u & 31
		u >>= 5
		if u > 0 {
			d |= 32
		}
		sb.WriteByte(b64[d])
		if u == 0 {
			return
		}
	}
}
