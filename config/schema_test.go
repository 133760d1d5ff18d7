package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compileSchema compiles Schema with a real JSON Schema validator (draft
// 2020-12, checked against its metaschema as it compiles).
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		t.Fatalf("schema.json is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("config.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("config.schema.json")
	if err != nil {
		t.Fatalf("schema.json does not compile: %v", err)
	}
	return s
}

// schemaVerdict is nil when the schema accepts data.
func schemaVerdict(s *jsonschema.Schema, data []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// far is a key within no typo of any key mcpx knows.
const far = "zzqqxx"

// objectProbes are the config's objects whose keys the decoder checks
// itself (decodeFields and the like), each as a document with the
// unknown key far in that object. The decoder's own message lists the
// keys it knows there, so the inventory below is the decoder's, not a
// copy of it.
var objectProbes = []struct{ path, doc string }{
	{"", `{"zzqqxx": 1}`},
	{"servers.*", `{"servers": {"s": {"command": "c", "zzqqxx": 1}}}`},
	{"servers.*.openapi", `{"servers": {"s": {"openapi": {"spec": "p.json", "baseUrl": "https://api.example", "zzqqxx": 1}}}}`},
	{"servers.*.openapi.oauth2", `{"servers": {"s": {"openapi": {"spec": "p.json", "baseUrl": "https://api.example", "oauth2": {"clientId": "i", "clientSecret": "${env:S}", "zzqqxx": 1}}}}}`},
	{"servers.*.oauth", `{"servers": {"s": {"url": "https://mcp.example/mcp", "oauth": {"clientId": "i", "zzqqxx": 1}}}}`},
	{"servers.*.cli", `{"servers": {"s": {"cli": {"tools": {"t": {"args": ["true"]}}, "zzqqxx": 1}}}}`},
	{"servers.*.cli.tools.*", `{"servers": {"s": {"cli": {"tools": {"t": {"args": ["true"], "zzqqxx": 1}}}}}}`},
	{"servers.*.ready", `{"servers": {"s": {"command": "c", "ready": {"stderr": "x", "zzqqxx": 1}}}}`},
	{"servers.*.health", `{"servers": {"s": {"command": "c", "health": {"interval": "30s", "zzqqxx": 1}}}}`},
	{"pool", `{"pool": {"zzqqxx": 1}}`},
	{"pool.health", `{"pool": {"health": {"interval": "30s", "zzqqxx": 1}}}`},
	{"limits", `{"limits": {"zzqqxx": 1}}`},
	{"nix", `{"nix": {"zzqqxx": 1}}`},
	{"records", `{"records": {"zzqqxx": 1}}`},
	{"log", `{"log": {"zzqqxx": 1}}`},
	{"script", `{"script": {"zzqqxx": 1}}`},
	{"script.deps", `{"script": {"deps": {"zzqqxx": 1}}}`},
	{"mcp", `{"mcp": {"zzqqxx": 1}}`},
	{"registry", `{"registry": {"zzqqxx": 1}}`},
	{"webhooks[]", `{"webhooks": [{"url": "https://hooks.example/x", "secret": "s", "zzqqxx": 1}]}`},
	{"otel", `{"otel": {"zzqqxx": 1}}`},
	{"public", `{"public": {"zzqqxx": 1}}`},
	{"public.grants[]", `{"public": {"issuer": "https://idp.example", "grants": [{"claim": "sub", "values": ["a"], "servers": ["s"], "zzqqxx": 1}]}}`},
	{"servers.*.sandbox", `{"servers": {"s": {"command": "c", "sandbox": {"zzqqxx": 1}}}}`},
	{"servers.*.sandbox.limits", `{"servers": {"s": {"command": "c", "sandbox": {"limits": {"zzqqxx": 1}}}}}`},
	{"defaults", `{"defaults": {"zzqqxx": 1}}`},
	{"public", `{"public": {"zzqqxx": 1}}`},
	{"public.clients[]", `{"public": {"clients": [{"id": "a", "redirectUris": ["https://a.example/cb"], "zzqqxx": 1}]}}`},
	{"defaults.sandbox", `{"defaults": {"sandbox": {"zzqqxx": 1}}}`},
	{"defaults.sandbox.limits", `{"defaults": {"sandbox": {"limits": {"zzqqxx": 1}}}}`},
}

// knownList finds, in the decoder's problem about far, the list of keys
// it says it knows ("known fields: a, b", "the fields are a, b and c").
var knownList = regexp.MustCompile(`(?:known fields: |the fields are )([^;]*)`)

func decoderKnows(t *testing.T, path, doc string) []string {
	t.Helper()
	_, err := Parse([]byte(doc), "probe.json")
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("%s: the decoder accepted an unknown key: %s", path, doc)
	}
	for _, e := range ce.Errs {
		p := e.(*Problem)
		if !strings.Contains(p.Msg+p.Field, far) {
			continue
		}
		m := knownList.FindStringSubmatch(p.Msg + "; " + p.Hint)
		if m == nil {
			t.Fatalf("%s: the decoder's problem names no known fields: %v", path, p)
		}
		list := strings.ReplaceAll(m[1], " and ", ", ")
		return strings.Split(strings.TrimSpace(list), ", ")
	}
	t.Fatalf("%s: no problem names %s: %v", path, far, err)
	return nil
}

// decoderKeys is every key path the decoder reads, with "*" for a name
// (a server's, a tool's, an allocation's) and "[]" for an array's
// elements: the keys its messages list in each object of objectProbes,
// the keys of the client formats it reads (clientTop, clientFields), the
// renamed "mode" it refuses with a hint, and the keys of the two objects
// it decodes with encoding/json's DisallowUnknownFields, from their Go
// types.
func decoderKeys(t *testing.T) map[string]bool {
	t.Helper()
	keys := map[string]bool{"$schema": true}
	add := func(path, k string) {
		if path != "" {
			k = path + "." + k
		}
		keys[k] = true
	}
	for _, pr := range objectProbes {
		for _, k := range decoderKnows(t, pr.path, pr.doc) {
			add(pr.path, k)
		}
	}
	for k := range clientTop {
		add("", k)
	}
	for _, k := range clientFields {
		add("servers.*", k)
	}
	add("servers.*", "mode")
	keys["servers.*"] = true
	keys["servers.*.cli.tools.*"] = true
	keys["servers.*.allocate.*"] = true
	for _, k := range jsonKeys(reflect.TypeFor[ScopePolicy]()) {
		add("servers.*.scopePolicy", k)
		add("pool.scopePolicy", k)
	}
	for _, k := range jsonKeys(reflect.TypeFor[Alloc]()) {
		add("servers.*.allocate.*", k)
	}
	return keys
}

func jsonKeys(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.IsExported() && name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// typeKeys is every key path of the Go types Parse fills: their json
// names, into structs that have some, through pointers, maps by name
// ("*") and slices ("[]"). A type that decodes itself and names no field
// (Duration, IdleTimeouts, InheritEnv, rights.Rate) is one value.
func typeKeys(t reflect.Type, path string, into map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Map:
		if hasJSONFields(t.Elem()) {
			into[path+".*"] = true
			typeKeys(t.Elem(), path+".*", into)
		}
		return
	case reflect.Slice:
		typeKeys(t.Elem(), path+"[]", into)
		return
	case reflect.Struct:
	default:
		return
	}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		p := strings.TrimPrefix(path+"."+name, ".")
		into[p] = true
		if hasJSONFields(f.Type) || f.Type.Kind() == reflect.Map || f.Type.Kind() == reflect.Slice {
			typeKeys(f.Type, p, into)
		}
	}
}

func hasJSONFields(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct && len(jsonKeys(t)) > 0
}

// schemaKeys is every key path the schema describes, as decoderKeys
// names them. mcpServers is one key: it holds what servers does.
func schemaKeys(t *testing.T) map[string]bool {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(Schema, &root); err != nil {
		t.Fatal(err)
	}
	defs := root["$defs"].(map[string]any)
	resolve := func(n map[string]any) map[string]any {
		for {
			ref, ok := n["$ref"].(string)
			if !ok {
				return n
			}
			n = defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		}
	}
	keys := map[string]bool{}
	var walk func(n map[string]any, path string)
	walk = func(n map[string]any, path string) {
		n = resolve(n)
		if e, ok := n["else"].(map[string]any); ok && n["if"] != nil { // a server: the fields of one not disabled
			walk(e, path)
		}
		props, _ := n["properties"].(map[string]any)
		for k, v := range props {
			p := strings.TrimPrefix(path+"."+k, ".")
			keys[p] = true
			if sub, ok := v.(map[string]any); ok && k != "mcpServers" {
				walk(sub, p)
			}
		}
		if ap, ok := n["additionalProperties"].(map[string]any); ok {
			ap = resolve(ap)
			if _, named := ap["properties"]; named || ap["if"] != nil {
				keys[path+".*"] = true
				walk(ap, path+".*")
			}
		}
		if items, ok := n["items"].(map[string]any); ok {
			walk(items, path+"[]")
		}
	}
	walk(defs["document"].(map[string]any), "")
	return keys
}

// TestSchemaKeysAreTheDecoders: the schema names every key the decoder
// reads and no other, and the decoder reads every key of the Go types it
// fills (and, beyond them, only the client formats' keys and $schema).
func TestSchemaKeysAreTheDecoders(t *testing.T) {
	compileSchema(t)
	dec, sch := decoderKeys(t), schemaKeys(t)
	if missing := diff(dec, sch); len(missing) > 0 {
		t.Errorf("the decoder reads keys schema.json does not name (add them):\n%s", strings.Join(missing, "\n"))
	}
	if stale := diff(sch, dec); len(stale) > 0 {
		t.Errorf("schema.json names keys the decoder does not read (remove them, or probe them in objectProbes):\n%s", strings.Join(stale, "\n"))
	}
	types := map[string]bool{}
	typeKeys(reflect.TypeFor[Config](), "", types)
	if missing := diff(types, dec); len(missing) > 0 {
		t.Errorf("the Go types have keys the decoder does not read:\n%s", strings.Join(missing, "\n"))
	}
	beyond := diff(dec, types)
	want := []string{"$schema", "globalShortcut", "inputs", "mcpServers", "preferences",
		"servers.*.alwaysAllow", "servers.*.autoApprove", "servers.*.dev", "servers.*.disabled", "servers.*.envFile",
		"servers.*.mode", "servers.*.timeout", "servers.*.transportType", "servers.*.type"}
	if !slices.Equal(beyond, want) {
		t.Errorf("keys the decoder reads beyond the Go types: %q, want the client formats' and $schema: %q", beyond, want)
	}
}

func diff(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestSchemaEnumsAreTheDecoders: the values the schema lists are the
// ones the decoder accepts.
func TestSchemaEnumsAreTheDecoders(t *testing.T) {
	var root struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(Schema, &root); err != nil {
		t.Fatal(err)
	}
	enum := func(def, pointer string) []string {
		var v any
		json.Unmarshal(root.Defs[def], &v) //nolint:errcheck // the schema is JSON: compileSchema
		for _, k := range strings.Split(pointer, "/") {
			if k != "" {
				v = v.(map[string]any)[k]
			}
		}
		var out []string
		for _, e := range v.(map[string]any)["enum"].([]any) {
			out = append(out, e.(string))
		}
		return out
	}
	for _, c := range []struct {
		def, pointer string
		want         []string
	}{
		{"scope", "", ScopeNames()},
		{"level", "", LogLevels},
		{"mcp", "properties/mode", MCPModes},
		{"webhook", "properties/events/items", WebhookEvents},
		{"script", "properties/deps/properties/from/items", DepSources},
		{"serverFields", "properties/type", slices.Sorted(maps.Keys(transportTypes))},
		{"serverFields", "properties/sharing", []string{string(SharingShared), string(SharingExclusive)}},
		{"sandbox", "properties/mode", SandboxModes},
	} {
		got := enum(c.def, c.pointer)
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(c.want))) {
			t.Errorf("%s/%s: the schema lists %q, the decoder %q", c.def, c.pointer, got, c.want)
		}
	}
}

// unknownKeyCases are the same documents fed to the decoder and to the
// schema, with an unknown key in each object of the config. In mcpx's
// own format both refuse it everywhere. In a client's format the
// decoder ignores (with a warning) a key far from every key it knows,
// except in the objects it decodes strictly whatever the format, and so
// must the schema.
var unknownKeyCases = []struct {
	name string
	doc  string // with %s where the unknown member goes
	// strict: refused in a client's format too.
	strict bool
}{
	{"top level", `{%s "servers": {"s": {"command": "c"}}}`, false},
	{"server", `{"servers": {"s": {%s "command": "c"}}}`, false},
	{"openapi", `{"servers": {"s": {"openapi": {%s "spec": "p.json", "baseUrl": "https://api.example"}}}}`, false},
	{"openapi.oauth2", `{"servers": {"s": {"openapi": {"spec": "p.json", "baseUrl": "https://api.example", "oauth2": {%s "clientId": "i", "clientSecret": "${env:S}"}}}}}`, false},
	{"oauth", `{"servers": {"s": {"url": "https://mcp.example/mcp", "oauth": {%s "clientId": "i"}}}}`, false},
	{"cli", `{"servers": {"s": {"cli": {%s "tools": {"t": {"args": ["true"]}}}}}}`, false},
	{"cli tool", `{"servers": {"s": {"cli": {"tools": {"t": {%s "args": ["true"]}}}}}}`, false},
	{"ready", `{"servers": {"s": {"command": "c", "ready": {%s "stderr": "x"}}}}`, false},
	{"health", `{"servers": {"s": {"command": "c", "health": {%s "interval": "30s"}}}}`, true},
	{"scopePolicy", `{"servers": {"s": {"command": "c", "scopePolicy": {%s "allowOverride": true}}}}`, true},
	{"allocate", `{"servers": {"s": {"command": "c", "args": ["${mcpx.alloc.port}"], "allocate": {"port": {%s "range": [9222, 9299]}}}}}`, true},
	{"pool", `{"servers": {"s": {"command": "c"}}, "pool": {%s "maxInstances": 8}}`, false},
	{"pool.health", `{"servers": {"s": {"command": "c"}}, "pool": {"health": {%s "interval": "30s"}}}`, true},
	{"pool.idleTimeout", `{"servers": {"s": {"command": "c"}}, "pool": {"idleTimeout": {%s "default": "5m"}}}`, true},
	{"limits", `{"servers": {"s": {"command": "c"}}, "limits": {%s "maxDepth": 8}}`, false},
	{"nix", `{"servers": {"s": {"command": "c"}}, "nix": {%s "offline": true}}`, false},
	{"records", `{"servers": {"s": {"command": "c"}}, "records": {%s "bodies": false}}`, false},
	{"log", `{"servers": {"s": {"command": "c"}}, "log": {%s "level": "info"}}`, false},
	{"script", `{"servers": {"s": {"command": "c"}}, "script": {%s "prefix": []}}`, true},
	{"script.deps", `{"servers": {"s": {"command": "c"}}, "script": {"deps": {%s "from": ["host"]}}}`, true},
	{"mcp", `{"servers": {"s": {"command": "c"}}, "mcp": {%s "mode": "tools"}}`, false},
	{"registry", `{"servers": {"s": {"command": "c"}}, "registry": {%s "url": "https://registry.example"}}`, false},
	{"webhook", `{"servers": {"s": {"command": "c"}}, "webhooks": [{%s "url": "https://hooks.example/x", "secret": "s"}]}`, false},
	{"otel", `{"servers": {"s": {"command": "c"}}, "otel": {%s "sample": 1}}`, false},
	{"public", `{"servers": {"s": {"command": "c"}}, "public": {%s "issuer": "https://idp.example"}}`, false},
	{"public.grant", `{"servers": {"s": {"command": "c"}}, "public": {"issuer": "https://idp.example", "grants": [{%s "claim": "sub", "values": ["a"], "servers": ["s"]}]}}`, false},
	{"sandbox", `{"servers": {"s": {"command": "c", "sandbox": {%s "network": "none"}}}}`, false},
	{"sandbox.limits", `{"servers": {"s": {"command": "c", "sandbox": {"limits": {%s "memory": "2GiB"}}}}}`, false},
	{"defaults", `{"servers": {"s": {"command": "c"}}, "defaults": {%s "sandbox": true}}`, false},
	{"defaults.sandbox", `{"servers": {"s": {"command": "c"}}, "defaults": {"sandbox": {%s "mode": "enforce"}}}`, false},
	{"public", `{"servers": {"s": {"command": "c"}}, "public": {%s "clients": []}}`, false},
	{"public.clients", `{"servers": {"s": {"command": "c"}}, "public": {"clients": [{%s "id": "a", "redirectUris": ["https://a.example/cb"]}]}}`, false},
}

// TestSchemaRefusesWhatTheDecoderRefuses feeds the same configs, each
// with an unknown key in one object, to the decoder and the schema, in
// mcpx's format and in a client's (the same document, servers under
// mcpServers): the two agree on each. Each document without the key is
// accepted by both, so a refusal is the key's.
func TestSchemaRefusesWhatTheDecoderRefuses(t *testing.T) {
	s := compileSchema(t)
	for _, c := range unknownKeyCases {
		for _, format := range []string{"mcpx", "client"} {
			doc := func(member string) []byte {
				d := fmt.Sprintf(c.doc, member)
				if format == "client" {
					d = strings.Replace(d, `"servers"`, `"mcpServers"`, 1)
				}
				return []byte(d)
			}
			name := c.name + " (" + format + ")"
			good := doc("")
			if _, err := Parse(good, "good.json"); err != nil {
				t.Fatalf("%s: the decoder refuses the document without the key: %v\n%s", name, err, good)
			}
			if err := schemaVerdict(s, good); err != nil {
				t.Fatalf("%s: the schema refuses the document without the key: %v\n%s", name, err, good)
			}
			bad := doc(`"zzqqxx": 1,`)
			_, decErr := Parse(bad, "bad.json")
			schErr := schemaVerdict(s, bad)
			refused := format == "mcpx" || c.strict
			if (decErr != nil) != refused {
				t.Errorf("%s: the decoder's verdict on an unknown key is %v, want refused=%v", name, decErr, refused)
			}
			if (schErr != nil) != refused {
				t.Errorf("%s: the schema's verdict on an unknown key is %v, want refused=%v", name, schErr, refused)
			}
		}
	}
}

// TestSchemaRefusesTypos: a misspelt key of mcpx's own ("comand") is
// refused by both in mcpx's format. (In a client's format the decoder
// still refuses a key within a typo of one it knows, which a schema
// cannot say: there the schema accepts it and the decoder's error names
// it with a did-you-mean.)
func TestSchemaRefusesTypos(t *testing.T) {
	s := compileSchema(t)
	for _, bad := range []string{
		`{"servers": {"s": {"comand": "c"}}}`,
		`{"servers": {"s": {"command": "c", "scop": "worktree"}}}`,
		`{"servers": {"s": {"command": "c"}}, "pool": {"maxInstance": 8}}`,
		`{"servers": {"s": {"command": "c"}}, "sever": {}}`,
		`{"servers": {"s": {"command": "c", "scopePolicy": {"allowOverrides": true}}}}`,
		`{"servers": {"s": {"command": "c", "mode": "exclusive"}}}`,
		`{"servers": {"s": {"command": "c", "envFile": ".env"}}}`,
	} {
		if _, err := Parse([]byte(bad), "bad.json"); err == nil {
			t.Errorf("the decoder accepts %s", bad)
		}
		if err := schemaVerdict(s, []byte(bad)); err == nil {
			t.Errorf("the schema accepts %s", bad)
		}
		client := strings.Replace(bad, `"servers"`, `"mcpServers"`, 1)
		if _, err := Parse([]byte(client), "bad.json"); err == nil {
			t.Errorf("the decoder accepts %s", client)
		}
	}
}

// TestSchemaAcceptsWhatTheDecoderAccepts: every config of the
// repository's testdata (the files in a testdata directory, and the
// config files of its txtar archives) that the decoder accepts, the
// schema accepts; every one the decoder refuses for an unknown key in
// mcpx's own format, the schema refuses. A config the decoder refuses
// for what a schema cannot say (a min over max, a placeholder in the
// wrong scope) the schema may accept.
func TestSchemaAcceptsWhatTheDecoderAccepts(t *testing.T) {
	s := compileSchema(t)
	configs := testdataConfigs(t, "..")
	accepted, refused := 0, 0
	for _, c := range configs {
		cfg, err := Parse(c.data, c.name)
		schErr := schemaVerdict(s, c.data)
		switch {
		case err == nil:
			accepted++
			if schErr != nil {
				t.Errorf("%s: the decoder accepts it, the schema refuses it: %v", c.name, schErr)
			}
		case unknownKeyRefusal(err) && !isForeignDoc(c.data):
			refused++
			if schErr == nil {
				t.Errorf("%s: the decoder refuses an unknown key (%v), the schema accepts it", c.name, err)
			}
		}
		_ = cfg
	}
	if accepted < 40 || refused < 2 {
		t.Fatalf("found %d configs the decoder accepts and %d it refuses for an unknown key: the search for testdata configs is broken", accepted, refused)
	}
	t.Logf("%d configs: %d accepted by both, %d refused by both for an unknown key", len(configs), accepted, refused)
}

func unknownKeyRefusal(err error) bool {
	var ce *Error
	if !errors.As(err, &ce) {
		return false
	}
	for _, e := range ce.Errs {
		if strings.Contains(e.(*Problem).Msg, "unknown field") || strings.Contains(e.(*Problem).Msg, "unknown top-level field") {
			return true
		}
	}
	return false
}

func isForeignDoc(data []byte) bool {
	members, err := objectMembers(data)
	return err == nil && isForeign(members)
}

type namedConfig struct {
	name string
	data []byte
}

// testdataConfigs finds the config documents under root's testdata
// directories: JSON files, and the JSON files of txtar archives, whose
// top-level object has servers or mcpServers, or that a config chain
// would read (…/mcpx/config.json). node_modules and fuzz corpora are
// not searched.
func testdataConfigs(t *testing.T, root string) []namedConfig {
	t.Helper()
	var out []namedConfig
	consider := func(name string, data []byte) {
		var top map[string]json.RawMessage
		if json.Unmarshal(data, &top) != nil {
			return
		}
		_, s := top["servers"]
		_, ms := top["mcpServers"]
		if s || ms || strings.HasSuffix(name, "mcpx/config.json") {
			out = append(out, namedConfig{name, data})
		}
	}
	err := walkTestdata(root, func(path string, data []byte) {
		if strings.HasSuffix(path, ".txtar") {
			for _, f := range txtarFiles(data) {
				if strings.HasSuffix(f.name, ".json") {
					consider(path+":"+f.name, f.data)
				}
			}
			return
		}
		if strings.HasSuffix(path, ".json") {
			consider(path, data)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// txtarFiles splits a txtar archive into its files (the format of
// golang.org/x/tools/txtar, which this package does not import).
func txtarFiles(data []byte) []namedConfig {
	var out []namedConfig
	marker := regexp.MustCompile(`(?m)^-- (.+) --$`)
	locs := marker.FindAllSubmatchIndex(data, -1)
	for i, l := range locs {
		end := len(data)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		start := l[1]
		if start < len(data) && data[start] == '\n' {
			start++
		}
		out = append(out, namedConfig{string(data[l[2]:l[3]]), data[start:end]})
	}
	return out
}

func walkTestdata(root string, f func(path string, data []byte)) error {
	return walkDir(root, false, f)
}

func walkDir(dir string, inTestdata bool, f func(path string, data []byte)) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		path := dir + "/" + name
		if e.IsDir() {
			if name == "node_modules" || name == "fuzz" || strings.HasPrefix(name, ".") {
				continue
			}
			if err := walkDir(path, inTestdata || name == "testdata", f); err != nil {
				return err
			}
			continue
		}
		if !inTestdata {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f(path, data)
	}
	return nil
}

// TestSchemaReference: a config may name its schema ("$schema", which
// mcpx ignores), as `mcpx config init` writes it; a $schema that is not
// a string is refused by both.
func TestSchemaReference(t *testing.T) {
	s := compileSchema(t)
	good := []byte(`{"$schema": "` + SchemaRef + `", "servers": {"s": {"command": "c"}}}`)
	if _, err := Parse(good, "good.json"); err != nil {
		t.Errorf("the decoder refuses $schema: %v", err)
	}
	if err := schemaVerdict(s, good); err != nil {
		t.Errorf("the schema refuses $schema: %v", err)
	}
	bad := []byte(`{"$schema": 1, "servers": {}}`)
	if _, err := Parse(bad, "bad.json"); err == nil || !strings.Contains(err.Error(), "$schema") {
		t.Errorf("the decoder's verdict on a $schema of 1 is %v, want an error naming $schema", err)
	}
	if err := schemaVerdict(s, bad); err == nil {
		t.Error("the schema accepts a $schema of 1")
	}
}
