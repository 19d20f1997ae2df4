package config

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// Parse reads the plugin configuration strictly and applies defaults. Every
// unknown field, repeated field, wrong type or malformed number is reported
// with its JSON path (all of them, joined), because a misspelled limit would
// otherwise leave a dimension unlimited without anyone noticing. Field names
// match exactly. Empty input is the empty object: no limits, all defaults.
func Parse(raw []byte) (*Config, error) {
	c, problems, err := parse(raw)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, errs.Wrap("parse plugin config", errors.Join(problems...))
	}
	return c, nil
}

// parse decodes what it can: the Config it returns (with defaults) holds
// every member that decoded, and problems lists the rest. err is set only
// when raw is not a JSON object at all.
func parse(raw []byte) (*Config, []error, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	// JSON text is UTF-8. A name or value with invalid bytes would be read
	// one way here and another by tools that replace them (encoding/json
	// reads U+FFFD), so a model or key named so could never match.
	if !utf8.Valid(raw) {
		return nil, nil, errs.New("parse plugin config: not valid UTF-8")
	}
	doc := jsonx.Parse(raw)
	switch doc.Kind {
	case jsonx.Invalid:
		return nil, nil, errs.New("parse plugin config: not valid JSON (one JSON object expected, nothing after it)")
	case jsonx.Object:
	default:
		return nil, nil, errs.New("parse plugin config: must be a JSON object")
	}
	var c Config
	d := decoder{path: make([]pathSeg, 0, 8)}
	d.decode(configPlan, doc, reflect.ValueOf(&c).Elem())
	c.applyDefaults()
	return &c, d.problems, nil
}

// Check reports every problem of a plugin config in one error: what the
// decoder could not read and, on everything it could, what Validate
// rejects, so an operator fixes a config in one round instead of one error
// at a time. A value that did not decode is reported once, by the decoder:
// validation problems at or under its path are left out. The Config is nil
// only when raw is not a JSON object.
func Check(raw []byte) (*Config, error) {
	c, problems, err := parse(raw)
	if err != nil {
		return nil, err
	}
	var all []error
	if len(problems) > 0 {
		all = append(all, errs.Wrap("parse plugin config", errors.Join(problems...)))
	}
	if verr := c.Validate(); verr != nil {
		if kept := notUnder(splitJoined(verr), problems); len(kept) > 0 {
			all = append(all, errs.Wrap("invalid plugin config", errors.Join(kept...)))
		}
	}
	return c, errors.Join(all...)
}

// splitJoined undoes errors.Join.
func splitJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// notUnder drops the problems whose path is one of parsed's paths or lies
// under one.
func notUnder(problems, parsed []error) []error {
	var out []error
	for _, p := range problems {
		pe, ok := p.(*pathError)
		covered := false
		for _, q := range parsed {
			qe, qok := q.(*pathError)
			if ok && qok && qe.covers && under(pe.path, qe.path) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	return out
}

func under(path, prefix string) bool {
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	if len(path) == len(prefix) || prefix == "" {
		return true
	}
	return path[len(prefix)] == '.' || path[len(prefix)] == '['
}

// pathError is one problem at one JSON path. covers is set when the
// value at path could not be decoded (so checks of what it would have
// meant are moot); an unknown or repeated member is reported at its
// object's path but leaves the object's other members standing.
type pathError struct {
	path, msg string
	covers    bool
}

func (e *pathError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

func problemAt(path, msg string) error { return &pathError{path: path, msg: msg} }

// JSONName is a field's JSON name ("" when the field is not serialized);
// the schema generator uses the same rule as the parser.
func JSONName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := jsonTag(f.Tag)
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

// jsonTag is the value of a field's json:"…" tag. The config's tags hold no
// escapes, so it is read up to the next quote; reflect's Tag.Get would
// unquote it with strconv, whose escape tables would then be linked into the
// module for this one read (at init, once per field).
func jsonTag(tag reflect.StructTag) string {
	_, v, ok := strings.Cut(" "+string(tag), ` json:"`)
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, `"`)
	return v
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
	return path + "[" + string(appendQuoted(nil, key)) + "]"
}

// closest suggests a known field within edit distance 2 of a typo.
func closest(name string, fields []string) string {
	best, bestD := "", 3
	for _, k := range fields {
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
