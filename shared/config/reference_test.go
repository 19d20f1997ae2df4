package config

// The encoding/json implementation Parse had before the .wasm had to stop
// linking syscall, kept verbatim (names suffixed Ref) as the oracle of the
// differential tests: the jsonx decoder must build the same Config and
// report the same problems.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"sort"

	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/money"
)

// Parse reads the plugin configuration strictly and applies defaults. Every
// unknown field, wrong type or malformed number is reported with its JSON
// path (all of them, joined), because a misspelled limit would otherwise
// leave a dimension unlimited without anyone noticing. Field names match
// exactly (encoding/json alone would accept "Storage" for "storage").
// Empty input is the empty object: no limits, all defaults.
func parseReference(raw []byte) (*Config, error) {
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
	checkShapeRef(reflect.TypeOf(Config{}), tree, "", &problems)
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

func problemAtRef(path, msg string) error { return &pathError{path: path, msg: msg} }

var (
	intTypeRef   = reflect.TypeOf(Int(0))
	floatTypeRef = reflect.TypeOf(Float(0))
	usdTypeRef   = reflect.TypeOf(USD(0))
	durTypeRef   = reflect.TypeOf(Duration(0))
)

// checkShape walks the generic JSON tree against the Go type and records
// every unknown field and type mismatch with its path.
func checkShapeRef(t reflect.Type, v any, path string, problems *[]error) {
	if v == nil {
		return // null is "absent"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case intTypeRef:
		var tok []byte
		switch x := v.(type) {
		case json.Number:
			tok = []byte(x.String())
		case string:
			tok = []byte(`"` + x + `"`)
		default:
			*problems = append(*problems, problemAtRef(path, errNotInteger.Error()))
			return
		}
		if _, err := parseInt(tok); err != nil {
			*problems = append(*problems, problemAtRef(path, err.Error()))
		}
		return
	case floatTypeRef:
		var tok []byte
		switch x := v.(type) {
		case json.Number:
			tok = []byte(x.String())
		case string:
			tok = []byte(`"` + x + `"`)
		default:
			*problems = append(*problems, problemAtRef(path, errNotNumber.Error()))
			return
		}
		if _, err := parseFloat(tok); err != nil {
			*problems = append(*problems, problemAtRef(path, err.Error()))
		}
		return
	case usdTypeRef: // added with the spend limits; not part of the old parser
		var tok []byte
		switch x := v.(type) {
		case json.Number:
			tok = []byte(x.String())
		case string:
			tok = []byte(`"` + x + `"`)
		default:
			*problems = append(*problems, problemAtRef(path, money.ErrSyntax.Error()))
			return
		}
		if _, err := money.ParseJSON(tok); err != nil {
			*problems = append(*problems, problemAtRef(path, err.Error()))
		}
		return
	case durTypeRef: // added with window_duration; not part of the old parser
		var tok []byte
		switch x := v.(type) {
		case json.Number:
			tok = []byte(x.String())
		case string:
			tok = []byte(`"` + x + `"`)
		default:
			*problems = append(*problems, problemAtRef(path, errNotDuration.Error()))
			return
		}
		if _, err := parseDuration(tok); err != nil {
			*problems = append(*problems, problemAtRef(path, err.Error()))
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			*problems = append(*problems, problemAtRef(path, "must be an object"))
			return
		}
		fields := jsonFieldsRef(t)
		for _, k := range sortedKeysRef(obj) {
			f, ok := fields[k]
			if !ok {
				msg := "unknown field \"" + k + "\""
				if s := closestRef(k, fields); s != "" {
					msg += " (did you mean \"" + s + "\"?)"
				}
				*problems = append(*problems, problemAtRef(path, msg))
				continue
			}
			checkShapeRef(f.Type, obj[k], joinPathRef(path, k), problems)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			*problems = append(*problems, problemAtRef(path, "must be an object"))
			return
		}
		for _, k := range sortedKeysRef(obj) {
			checkShapeRef(t.Elem(), obj[k], mapPathRef(path, k), problems)
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			*problems = append(*problems, problemAtRef(path, "must be an array"))
			return
		}
		for i, e := range arr {
			checkShapeRef(t.Elem(), e, path+"["+formatInt(int64(i))+"]", problems)
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			*problems = append(*problems, problemAtRef(path, "must be a string"))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			*problems = append(*problems, problemAtRef(path, "must be true or false"))
		}
	}
}

// jsonFields maps each JSON name of a struct to its field.
func jsonFieldsRef(t reflect.Type) map[string]reflect.StructField {
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

func sortedKeysRef(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func joinPathRef(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// mapPath names a map entry; keys that are not plain identifiers (model
// names such as "gpt-4.1") are quoted so the path stays unambiguous.
func mapPathRef(path, key string) string {
	plain := key != ""
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			plain = false
			break
		}
	}
	if plain {
		return joinPathRef(path, key)
	}
	q, _ := json.Marshal(key)
	return path + "[" + string(q) + "]"
}

// closest suggests a known field within edit distance 2 of a typo.
func closestRef(name string, fields map[string]reflect.StructField) string {
	best, bestD := "", 3
	for k := range fields {
		if d := editDistanceRef(name, k); d < bestD || (d == bestD && k < best) {
			best, bestD = k, d
		}
	}
	return best
}

func editDistanceRef(a, b string) int {
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
