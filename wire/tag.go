package wire

import (
	"bytes"
	"encoding/json"
	"io"
)

// TagServer returns the MCP Tool object tool with "server": name as its
// first member: the shape of ToolList's tools. The rest of the object keeps
// the bytes the child sent, unless the child's object has a top-level
// "server" member of its own, which is dropped (the tag names the broker's
// server, and a document with the member twice would be ambiguous).
// Anything that is not a JSON object is returned unchanged.
func TagServer(name string, tool json.RawMessage) json.RawMessage {
	rest := bytes.TrimSpace(tool)
	if len(rest) < 2 || rest[0] != '{' {
		return tool
	}
	tag, _ := json.Marshal(name)
	if bytes.Contains(rest, []byte("server")) || bytes.Contains(rest, []byte(`\u`)) {
		// Possibly a "server" member of its own (perhaps escaped): look.
		if members, ok := topLevelMembers(rest); ok && hasMember(members, "server") {
			return rebuild(tag, members)
		}
	}
	out := make([]byte, 0, len(rest)+len(tag)+11)
	out = append(out, `{"server":`...)
	out = append(out, tag...)
	inner := bytes.TrimSpace(rest[1:])
	if len(inner) > 0 && inner[0] != '}' {
		out = append(out, ',')
	}
	return append(out, inner...)
}

type member struct {
	name  string
	value json.RawMessage
}

// topLevelMembers splits a JSON object into its members, values as sent.
func topLevelMembers(obj []byte) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		name, ok := tok.(string)
		if err != nil || !ok {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		out = append(out, member{name, v})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return out, true
}

func hasMember(members []member, name string) bool {
	for _, m := range members {
		if m.name == name {
			return true
		}
	}
	return false
}

// rebuild writes {"server":tag, members other than "server"...}.
func rebuild(tag []byte, members []member) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"server":`)
	b.Write(tag)
	for _, m := range members {
		if m.name == "server" {
			continue
		}
		name, _ := json.Marshal(m.name)
		b.WriteByte(',')
		b.Write(name)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}
