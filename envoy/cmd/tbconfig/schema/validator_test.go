package schema

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// validateInstance checks a JSON document against the subset of draft
// 2020-12 that Generate emits: $ref into $defs, anyOf, type, properties,
// additionalProperties, required, items, enum, minimum, pattern. It returns
// one line per violation, with the instance path.
func validateInstance(schemaDoc, instance []byte) ([]string, error) {
	var root map[string]any
	if err := json.Unmarshal(schemaDoc, &root); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(instance))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var out []string
	check(root, root, v, "$", &out)
	return out, nil
}

func check(root, s map[string]any, v any, path string, out *[]string) {
	if r, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(r, "#/$defs/")
		def, _ := root["$defs"].(map[string]any)[name].(map[string]any)
		if def == nil {
			*out = append(*out, path+": unresolved $ref "+r)
			return
		}
		check(root, def, v, path, out)
	}
	if alts, ok := s["anyOf"].([]any); ok {
		matched := false
		for _, alt := range alts {
			var sub []string
			check(root, alt.(map[string]any), v, path, &sub)
			if len(sub) == 0 {
				matched = true
				break
			}
		}
		if !matched {
			*out = append(*out, path+": matches no alternative")
		}
	}
	if t, ok := s["type"].(string); ok && !hasType(t, v) {
		*out = append(*out, path+": not of type "+t)
		return
	}
	if enum, ok := s["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			found = found || e == v
		}
		if !found {
			*out = append(*out, path+": not in enum")
		}
	}
	if m, ok := s["minimum"].(float64); ok {
		if n, isNum := v.(json.Number); isNum {
			if f, _ := n.Float64(); f < m {
				*out = append(*out, path+": below minimum")
			}
		}
	}
	if p, ok := s["pattern"].(string); ok {
		if str, isStr := v.(string); isStr && !regexp.MustCompile(p).MatchString(str) {
			*out = append(*out, path+": does not match "+p)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, ok := props[k].(map[string]any); ok {
				check(root, ps, x[k], path+"."+k, out)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					*out = append(*out, path+": unknown property "+k)
				}
			case map[string]any:
				check(root, ap, x[k], path+"."+k, out)
			}
		}
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, present := x[r.(string)]; !present {
					*out = append(*out, path+": missing "+r.(string))
				}
			}
		}
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range x {
				check(root, items, e, path+"["+strconv.Itoa(i)+"]", out)
			}
		}
	}
}

func hasType(t string, v any) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		f, err := n.Float64()
		return err == nil && f == math.Trunc(f)
	}
	return false
}
