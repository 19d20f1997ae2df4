package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"sort"
	"strings"

	"github.com/tokenbudget/tokenbudget/shared/errs"
)

// Parse reads the plugin configuration strictly and applies defaults. Every
// unknown field, wrong type or malformed number is reported with its JSON
// path (all of them, joined), because a misspelled limit would otherwise
// leave a dimension unlimited without anyone noticing. Field names match
// exactly (encoding/json alone would accept "Storage" for "storage").
// Empty input is the empty object: no limits, all defaults.
func Parse(raw []byte) (*Config, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, errs.Wrap("parse plugin config", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errs.New("parse plugin config: data after the top-level JSON value")
	}
	if _, ok := tree.(map[string]any); !ok {
		return nil, errs.New("parse plugin config: must be a JSON object")
	}
	var problems []error
	checkShape(reflect.TypeOf(Config{}), tree, "", &problems)
	if len(problems) > 0 {
		return nil, errs.Wrap("parse plugin config", errors.Join(problems...))
	}
	var c Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, errs.Wrap("parse plugin config", err)
	}
	c.applyDefaults()
	return &c, nil
}

// pathError is one problem at one JSON path.
type pathError struct {
	path, msg string
}

func (e *pathError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

func problemAt(path, msg string) error { return &pathError{path: path, msg: msg} }

var (
	intType   = reflect.TypeOf(Int(0))
	floatType = reflect.TypeOf(Float(0))
)

// checkShape walks the generic JSON tree against the Go type and records
// every unknown field and type mismatch with its path.
func checkShape(t reflect.Type, v any, path string, problems *[]error) {
	if v == nil {
		return // null is "absent"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case intType:
		var tok []byte
		switch x := v.(type) {
		case json.Number:
			tok = []byte(x.String())
		case string:
			tok = []byte(`"` + x + `"`)
		default:
			*problems = append(*problems, problemAt(path, errNotInteger.Error()))
			return
		}
		if _, err := parseInt(tok); err != nil {
			*problems = append(*problems, problemAt(path, err.Error()))
		}
		return
	case floatType:
		var tok []byte
		switch x := v.(type) {
		case json.Number:
			tok = []byte(x.String())
		case string:
			tok = []byte(`"` + x + `"`)
		default:
			*problems = append(*problems, problemAt(path, errNotNumber.Error()))
			return
		}
		if _, err := parseFloat(tok); err != nil {
			*problems = append(*problems, problemAt(path, err.Error()))
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			*problems = append(*problems, problemAt(path, "must be an object"))
			return
		}
		fields := jsonFields(t)
		for _, k := range sortedKeys(obj) {
			f, ok := fields[k]
			if !ok {
				msg := "unknown field \"" + k + "\""
				if s := closest(k, fields); s != "" {
					msg += " (did you mean \"" + s + "\"?)"
				}
				*problems = append(*problems, problemAt(path, msg))
				continue
			}
			checkShape(f.Type, obj[k], joinPath(path, k), problems)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			*problems = append(*problems, problemAt(path, "must be an object"))
			return
		}
		for _, k := range sortedKeys(obj) {
			checkShape(t.Elem(), obj[k], mapPath(path, k), problems)
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			*problems = append(*problems, problemAt(path, "must be an array"))
			return
		}
		for i, e := range arr {
			checkShape(t.Elem(), e, path+"["+formatInt(int64(i))+"]", problems)
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			*problems = append(*problems, problemAt(path, "must be a string"))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			*problems = append(*problems, problemAt(path, "must be true or false"))
		}
	}
}

// jsonFields maps each JSON name of a struct to its field.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := make(map[string]reflect.StructField, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := JSONName(f)
		if name == "" {
			continue
		}
		out[name] = f
	}
	return out
}

// JSONName is a field's JSON name ("" when the field is not serialized);
// the schema generator uses the same rule as the parser.
func JSONName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return ""
	}
	if i := strings.IndexByte(tag, ','); i >= 0 {
		tag = tag[:i]
	}
	if tag == "" {
		return f.Name
	}
	return tag
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func joinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// mapPath names a map entry; keys that are not plain identifiers (model
// names such as "gpt-4.1") are quoted so the path stays unambiguous.
func mapPath(path, key string) string {
	plain := key != ""
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			plain = false
			break
		}
	}
	if plain {
		return joinPath(path, key)
	}
	q, _ := json.Marshal(key)
	return path + "[" + string(q) + "]"
}

// closest suggests a known field within edit distance 2 of a typo.
func closest(name string, fields map[string]reflect.StructField) string {
	best, bestD := "", 3
	for k := range fields {
		if d := editDistance(name, k); d < bestD || (d == bestD && k < best) {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
