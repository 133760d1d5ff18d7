package deploy

import (
	"bytes"
	"fmt"
	"strings"
)

// Codex keeps its MCP servers as TOML tables in config.toml
// ([mcp_servers.<name>], as `codex mcp add` 0.171.0 writes them). mcpx
// edits the file as text, so the user's comments and layout stay: its part
// is the lines of the [mcp_servers.mcpx] table (and any
// [mcp_servers.mcpx.*] subtables) up to the next table.

// codexTable is the TOML table of s for codex: command and args, or url
// with the headers as http_headers (codex refuses an inline bearer_token,
// and bearer_token_env_var would need the token in codex's environment).
func codexTable(binary string, s Server) string {
	var b strings.Builder
	b.WriteString(codexHeader + "\n")
	if !s.HTTP() {
		args := make([]string, 0, len(s.args()))
		for _, a := range s.args() {
			args = append(args, jsonString(a))
		}
		fmt.Fprintf(&b, "command = %s\nargs = [%s]\n", jsonString(binary), strings.Join(args, ", "))
		return b.String()
	}
	fmt.Fprintf(&b, "url = %s\n", jsonString(s.URL))
	if len(s.Headers) > 0 {
		var hs []string
		for _, k := range s.headerNames() {
			hs = append(hs, jsonString(k)+" = "+jsonString(s.Headers[k]))
		}
		fmt.Fprintf(&b, "http_headers = { %s }\n", strings.Join(hs, ", "))
	}
	return b.String()
}

const codexHeader = "[mcp_servers." + EntryName + "]"

// TOMLTable is the [mcp_servers.mcpx] table, want, in the TOML file at
// path. File modes as for MCPEntry.
func TOMLTable(path, want string, s Server) Part {
	return Part{
		Path: path, Name: codexHeader, Want: want, Mode: 0o600, Private: len(s.Headers) > 0, secrets: s.secrets(), mcp: true,
		get: func(file []byte) (string, bool, error) {
			start, end, err := tomlTable(file)
			if err != nil || start < 0 {
				return "", false, err
			}
			table := string(file[start:end])
			if !strings.HasSuffix(table, "\n") {
				table += "\n" // the file's last line, without its newline: the same table
			}
			return table, true, nil
		},
		put: func(file []byte, part string) ([]byte, error) {
			start, end, err := tomlTable(file)
			if err != nil {
				return nil, err
			}
			if start < 0 {
				if part == "" {
					return file, nil
				}
				out := bytes.TrimRight(file, "\n")
				if len(out) > 0 {
					out = append(out, "\n\n"...)
				}
				return append(out, part...), nil
			}
			before, after := file[:start:start], file[end:]
			if part == "" {
				// The blank line before the table goes with it.
				before = bytes.TrimRight(before, "\n")
				if len(before) > 0 {
					before = append(before, '\n')
					if len(bytes.TrimLeft(after, "\n")) > 0 {
						before = append(before, '\n')
					}
				}
				after = bytes.TrimLeft(after, "\n")
			}
			return append(append(bytes.Clone(before), part...), after...), nil
		},
	}
}

// tomlTable finds the [mcp_servers.mcpx] table in file: the span from its
// header to the next table that is not one of its subtables, trailing
// blank lines left out; -1 when there is none. A file that defines
// mcp_servers.mcpx otherwise (a dotted key, an inline table under
// [mcp_servers]) or twice is an error: mcpx does not rewrite it.
func tomlTable(file []byte) (start, end int, err error) {
	start, end = -1, -1
	table := ""   // the current table's name, spaces and quotes removed
	lastBody := 0 // the end of the last non-blank line of our table
	off := 0
	for line := range strings.Lines(string(file)) {
		lineStart := off
		off += len(line)
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") {
			name := tableName(t)
			if start >= 0 && end < 0 && name != "mcp_servers.mcpx" && !strings.HasPrefix(name, "mcp_servers.mcpx.") {
				end = lastBody
			}
			if start >= 0 && end < 0 {
				lastBody = off // a subtable of ours
			}
			if name == "mcp_servers.mcpx" {
				if start >= 0 {
					return 0, 0, fmt.Errorf("it holds two %s tables: remove one", codexHeader)
				}
				start, lastBody = lineStart, off
			}
			table = name
			continue
		}
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		key := strings.ReplaceAll(strings.ReplaceAll(strings.SplitN(t, "=", 2)[0], " ", ""), `"`, "")
		if (table == "" && strings.HasPrefix(key, "mcp_servers.mcpx")) || (table == "mcp_servers" && (key == "mcpx" || strings.HasPrefix(key, "mcpx."))) {
			return 0, 0, fmt.Errorf("it defines mcp_servers.mcpx other than as a %s table: change it there yourself", codexHeader)
		}
		if start >= 0 && end < 0 {
			lastBody = off
		}
	}
	if start >= 0 && end < 0 {
		end = lastBody
	}
	return start, end, nil
}

// tableName is the name of a TOML table header line ("[a . \"b\"] # x" ->
// "a.b"); "" for an array of tables.
func tableName(header string) string {
	if strings.HasPrefix(header, "[[") {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(header, "["), "]")
	return strings.NewReplacer(" ", "", "\t", "", `"`, "", "'", "").Replace(name)
}
