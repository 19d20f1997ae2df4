// Package schema publishes the plugin configuration's JSON Schema, generated
// by reflection from the same Go types the parser decodes into, so the
// schema cannot drift from what the filter accepts. Native only (it uses
// encoding/json and reflection freely), so it lives beside the command that
// publishes it, outside the wasm-only shared/.
package schema

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/tokenbudget/tokenbudget/shared/config"
)

// ID is the schema's $id.
const ID = "https://github.com/tokenbudget/tokenbudget/shared/config/plugin-config.schema.json"

var (
	intType   = reflect.TypeOf(config.Int(0))
	floatType = reflect.TypeOf(config.Float(0))
	usdType   = reflect.TypeOf(config.USD(0))
	durType   = reflect.TypeOf(config.Duration(0))
)

// Generate returns the schema document (draft 2020-12), indented, with a
// trailing newline. Every object has additionalProperties false (map-valued
// fields constrain their values instead), matching the strict parser.
func Generate() ([]byte, error) {
	g := &generator{defs: map[string]any{}}
	root := g.typeSchema(reflect.TypeOf(config.Config{}))
	doc := map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"$id":     ID,
		"title":   "tokenbudget plugin configuration",
		"description": "The Envoy `configuration` value of the tokenbudget filter. 0 means unlimited in every limit. " +
			"Integers may be written as 32000, 32000.0 or \"32000\". Generated from shared/config; do not edit.",
		"$defs": g.defs,
	}
	for k, v := range root {
		doc[k] = v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type generator struct {
	defs map[string]any
}

// typeSchema returns the schema of a type; named structs, Int and Float go
// to $defs and are referenced.
func (g *generator) typeSchema(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case intType:
		g.defs["Int"] = map[string]any{
			"description": "A non-negative whole number: an integer, an integral number (32000.0) or a decimal string (\"32000\").",
			"anyOf": []any{
				map[string]any{"type": "integer", "minimum": 0},
				map[string]any{"type": "string", "pattern": `^[0-9]+(\.0+)?$`},
			},
		}
		return ref("Int")
	case floatType:
		g.defs["Float"] = map[string]any{
			"description": "A non-negative rate: a number or a decimal string (\"2.5\").",
			"anyOf": []any{
				map[string]any{"type": "number", "minimum": 0},
				map[string]any{"type": "string", "pattern": `^[0-9]+(\.[0-9]+)?$`},
			},
		}
		return ref("Float")
	case usdType:
		g.defs["USD"] = map[string]any{
			"description": "A non-negative USD figure with at most 9 decimal places, read exactly: a number (0.15, 2.5e-06) or a decimal string (\"200.00\").",
			"anyOf": []any{
				map[string]any{"type": "number", "minimum": 0},
				map[string]any{"type": "string", "pattern": `^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`},
			},
		}
		return ref("USD")
	case durType:
		g.defs["Duration"] = map[string]any{
			"description": "A non-negative length of time: a duration string (\"60s\", \"1m30s\", \"500ms\") or a number of seconds (60, \"60\").",
			"anyOf": []any{
				map[string]any{"type": "number", "minimum": 0},
				map[string]any{"type": "string", "pattern": `^([0-9]*\.?[0-9]+(ns|us|µs|ms|s|m|h))+$|^[0-9]+(\.[0-9]+)?$`},
			},
		}
		return ref("Duration")
	}
	switch t.Kind() {
	case reflect.Struct:
		name := t.Name()
		if _, done := g.defs[name]; !done {
			g.defs[name] = nil // reserve: breaks recursion
			g.defs[name] = g.structSchema(t)
		}
		return ref(name)
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.typeSchema(t.Elem())}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.typeSchema(t.Elem())}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	}
	return map[string]any{}
}

func (g *generator) structSchema(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := config.JSONName(f)
		if name == "" {
			continue
		}
		s := g.typeSchema(f.Type)
		out := make(map[string]any, len(s)+2)
		for k, v := range s {
			out[k] = v
		}
		if d := f.Tag.Get("desc"); d != "" {
			out["description"] = d
		}
		if e := f.Tag.Get("enum"); e != "" {
			var vals []any
			for _, v := range strings.Split(e, ",") {
				vals = append(vals, v)
			}
			out["enum"] = vals
		}
		props[name] = out
		base := f.Type
		for base.Kind() == reflect.Pointer {
			base = base.Elem()
		}
		// A field without omitempty is required, except nested sections
		// (structs), which are optional objects with defaults.
		if !strings.Contains(f.Tag.Get("json"), ",omitempty") && base.Kind() != reflect.Struct {
			required = append(required, name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/$defs/" + name} }
