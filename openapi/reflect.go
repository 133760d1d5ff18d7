package openapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"mcpx.dev/mcpx/wire"
)

// The reflector: JSON Schema (2020-12, OpenAPI 3.1's dialect) of the Go
// types wire names, as encoding/json encodes them.
//
// It is small and our own rather than a general one (kin-openapi's
// openapi3gen, invopop/jsonschema, google/jsonschema-go) because the wire
// documents need three things those do not give together: every named
// struct becomes one component referenced by $ref (so that generated clients
// get named types, and a document shared by several routes, such as Problem,
// is described once); a json.RawMessage member passed on from a child is
// typed by the MCP schema its `mcp` tag names, which only the contract knows;
// and a member's optionality and nullability follow its json options exactly
// (omitempty/omitzero = optional; a pointer, slice or map without them may
// be null). The wire types use only structs (also embedded), pointers,
// slices, string-keyed maps, strings, booleans, numbers, any, time.Time and
// json.RawMessage; anything else is an error, found by the tests.

var (
	typeTime = reflect.TypeFor[time.Time]()
	typeRaw  = reflect.TypeFor[json.RawMessage]()
)

// reflector collects the components of the types it has described (and,
// for the document, its shared responses).
type reflector struct {
	schemas map[string]any          // component name -> schema
	owners  map[string]reflect.Type // component name -> the type it describes
	// responses are the shared problem responses, by component name.
	responses map[string]any
}

func newReflector() *reflector {
	return &reflector{schemas: map[string]any{}, owners: map[string]reflect.Type{}, responses: map[string]any{}}
}

func ref(name string) map[string]any {
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

// schema returns the schema of t: a $ref for a named struct (whose component
// it adds), an inline schema otherwise. nullable allows JSON null, as
// encoding/json writes for a nil pointer, slice or map.
func (r *reflector) schema(t reflect.Type) (any, error) {
	switch {
	case t == typeTime:
		return map[string]any{"type": "string", "format": "date-time"}, nil
	case t == typeRaw:
		return map[string]any{}, nil // any JSON value
	}
	switch t.Kind() {
	case reflect.Pointer:
		return r.schema(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s := map[string]any{"type": "integer"}
		if t.Size() == 8 {
			s["format"] = "int64"
		}
		return s, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return map[string]any{}, nil
		}
	case reflect.Slice, reflect.Array:
		items, err := r.schema(t.Elem())
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			break
		}
		vals, err := r.schema(t.Elem())
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": vals}, nil
	case reflect.Struct:
		if t.Name() == "" {
			return r.object(t)
		}
		name := t.Name()
		if owner, ok := r.owners[name]; ok {
			if owner != t {
				return nil, fmt.Errorf("two types named %s: %s and %s", name, owner, t)
			}
			return ref(name), nil
		}
		r.owners[name] = t
		s, err := r.object(t)
		if err != nil {
			return nil, err
		}
		r.schemas[name] = s
		return ref(name), nil
	}
	return nil, fmt.Errorf("%s: no JSON Schema for a %s", t, t.Kind())
}

// object describes a struct's members, in field order (embedded structs'
// members promoted, as encoding/json does).
func (r *reflector) object(t reflect.Type) (map[string]any, error) {
	props := map[string]any{}
	var required []string
	for _, f := range reflect.VisibleFields(t) {
		name, opts, skip := jsonName(f)
		if skip {
			continue
		}
		if _, dup := props[name]; dup {
			return nil, fmt.Errorf("%s: two members named %q", t, name)
		}
		s, err := r.member(t, f)
		if err != nil {
			return nil, err
		}
		props[name] = s
		if !strings.Contains(opts, ",omitempty") && !strings.Contains(opts, ",omitzero") {
			required = append(required, name)
			if nullable(f.Type) {
				props[name] = map[string]any{"oneOf": []any{s, map[string]any{"type": "null"}}}
			}
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s, nil
}

// member is the schema of one struct field: its type's, or the MCP type its
// `mcp` tag names.
func (r *reflector) member(t reflect.Type, f reflect.StructField) (any, error) {
	tag, ok := f.Tag.Lookup("mcp")
	if !ok {
		return r.schema(f.Type)
	}
	elem, array := strings.CutPrefix(tag, "[]")
	if f.Type == typeRaw {
		if array {
			return map[string]any{"type": "array", "items": ref(mcpComponent(elem))}, nil
		}
		return ref(mcpComponent(elem)), nil
	}
	if !array && f.Type.Kind() == reflect.Slice && f.Type.Elem() == typeRaw {
		return map[string]any{"type": "array", "items": ref(mcpComponent(elem))}, nil
	}
	return nil, fmt.Errorf("%s.%s: mcp tag %q on a %s: only json.RawMessage members (or slices of them) are typed by tag", t, f.Name, tag, f.Type)
}

// jsonName is the member name of f as encoding/json writes it, and its tag
// options; skip is true for a field encoding/json leaves out (unexported,
// "-", or an embedded struct, whose fields VisibleFields lists itself).
func jsonName(f reflect.StructField) (name, opts string, skip bool) {
	tag := f.Tag.Get("json")
	if tag == "-" || !f.IsExported() && !f.Anonymous {
		return "", "", true
	}
	name, rest, _ := strings.Cut(tag, ",")
	if f.Anonymous && name == "" {
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			return "", "", true
		}
	}
	if !f.IsExported() {
		return "", "", true
	}
	if name == "" {
		name = f.Name
	}
	return name, "," + rest, false
}

// nullable reports whether encoding/json may write null for a value of t.
func nullable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Map:
		return true // (an interface may be null too, but its schema {} already allows it)
	case reflect.Slice:
		return t != typeRaw // a nil RawMessage is written as null, but no document sends one
	}
	return false
}

var typeProblem = reflect.TypeFor[wire.Problem]()
