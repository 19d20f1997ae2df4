package config

import (
	"bytes"
	"reflect"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// The strict decoder: one pass over a jsonx.Value that fills the Go value
// and records every problem with its JSON path. It replaces encoding/json,
// which links syscall (docs/envoy-wasi.md). Semantics follow what Parse did
// with encoding/json: exact field names, null is absent (the target keeps
// its zero value, but a null array element or map value still creates the
// entry), [] and {} make empty non-nil slices and maps, a type whose pointer
// has UnmarshalJSON (Int, Float) gets the raw token. Unlike encoding/json a
// repeated member name is an error: with "last wins" a pasted block could
// silently replace a limit written above it.

// unmarshaler is the one method Int and Float need; naming it here keeps
// encoding/json out of the import graph.
type unmarshaler interface {
	UnmarshalJSON([]byte) error
}

var unmarshalerType = reflect.TypeFor[unmarshaler]()

type planKind uint8

const (
	planUnsupported planKind = iota
	planUnmarshal
	planStruct
	planMap
	planSlice
	planPointer
	planString
	planBool
)

// plan is how to decode one Go type, built once per type at package init so
// decoding does no reflection on struct tags.
type plan struct {
	kind   planKind
	typ    reflect.Type
	elem   *plan                // pointer, slice, map
	fields map[string]fieldPlan // struct, by JSON name
	names  []string             // struct JSON names, for "did you mean"
}

type fieldPlan struct {
	name  string
	index int
	plan  *plan
}

// configPlan is built at init (no lazily filled cache, so concurrent native
// callers never race on it).
var configPlan = buildPlan(reflect.TypeFor[Config](), map[reflect.Type]*plan{})

func buildPlan(t reflect.Type, seen map[reflect.Type]*plan) *plan {
	if p, ok := seen[t]; ok {
		return p
	}
	p := &plan{typ: t}
	seen[t] = p
	switch {
	case reflect.PointerTo(t).Implements(unmarshalerType):
		p.kind = planUnmarshal
	case t.Kind() == reflect.Struct && t.NumField() <= 64:
		p.kind = planStruct
		p.fields = make(map[string]fieldPlan, t.NumField())
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := JSONName(f)
			if name == "" {
				continue
			}
			p.fields[name] = fieldPlan{name: name, index: i, plan: buildPlan(f.Type, seen)}
			p.names = append(p.names, name)
		}
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		p.kind = planMap
		p.elem = buildPlan(t.Elem(), seen)
	case t.Kind() == reflect.Slice:
		p.kind = planSlice
		p.elem = buildPlan(t.Elem(), seen)
	case t.Kind() == reflect.Pointer:
		p.kind = planPointer
		p.elem = buildPlan(t.Elem(), seen)
	case t.Kind() == reflect.String:
		p.kind = planString
	case t.Kind() == reflect.Bool:
		p.kind = planBool
	}
	return p
}

// pathSeg is one step of a JSON path. The decoder keeps them in a stack
// and turns them into a string only when a problem is recorded, so a clean
// document builds no path strings.
type pathSeg struct {
	name  string // field or map key
	index int    // array index
	kind  segKind
}

type segKind uint8

const (
	segField segKind = iota
	segKey
	segIndex
)

type decoder struct {
	path     []pathSeg
	problems []error
}

func (d *decoder) push(s pathSeg) { d.path = append(d.path, s) }
func (d *decoder) pop()           { d.path = d.path[:len(d.path)-1] }

// pathString spells the current path the way the encoding/json-based
// parser did: a.b, a[0], a["gpt-4.1"].
func (d *decoder) pathString() string {
	path := ""
	for _, s := range d.path {
		switch s.kind {
		case segKey:
			path = mapPath(path, s.name)
		case segIndex:
			path += "[" + formatInt(int64(s.index)) + "]"
		default:
			path = joinPath(path, s.name)
		}
	}
	return path
}

// fail records that the value at the current path could not be decoded.
func (d *decoder) fail(msg string) {
	d.problems = append(d.problems, &pathError{path: d.pathString(), msg: msg, covers: true})
}

// failMember records a bad member name (unknown, repeated) at the current
// object's path; the object's other members still count.
func (d *decoder) failMember(msg string) {
	d.problems = append(d.problems, problemAt(d.pathString(), msg))
}

// decode fills rv (settable, holding its zero value) from v.
func (d *decoder) decode(p *plan, v jsonx.Value, rv reflect.Value) {
	if v.Kind == jsonx.Null {
		return // null is "absent"
	}
	switch p.kind {
	case planUnmarshal:
		u, ok := rv.Addr().Interface().(unmarshaler)
		if !ok {
			d.fail("cannot be decoded")
			return
		}
		if err := u.UnmarshalJSON(v.Raw); err != nil {
			d.fail(err.Error())
		}
	case planString:
		if v.Kind != jsonx.String {
			d.fail("must be a string")
			return
		}
		rv.SetString(v.Str())
	case planBool:
		switch v.Kind {
		case jsonx.True:
			rv.SetBool(true)
		case jsonx.False:
			rv.SetBool(false)
		default:
			d.fail("must be true or false")
		}
	case planPointer:
		nv := reflect.New(p.elem.typ)
		d.decode(p.elem, v, nv.Elem())
		rv.Set(nv)
	case planSlice:
		if v.Kind != jsonx.Array {
			d.fail("must be an array")
			return
		}
		n := v.Len()
		s := reflect.MakeSlice(p.typ, n, n)
		i := 0
		v.ForEach(func(_ []byte, e jsonx.Value) bool {
			if i >= n {
				return false
			}
			d.push(pathSeg{index: i, kind: segIndex})
			d.decode(p.elem, e, s.Index(i))
			d.pop()
			i++
			return true
		})
		rv.Set(s)
	case planStruct:
		if v.Kind != jsonx.Object {
			d.fail("must be an object")
			return
		}
		d.object(p, v, rv)
	case planMap:
		if v.Kind != jsonx.Object {
			d.fail("must be an object")
			return
		}
		d.object(p, v, rv)
	default:
		d.fail("cannot be decoded")
	}
}

// problemRun is the problems one member produced, so they can be put in
// key order afterwards (the order operators saw before, and a stable one).
type problemRun struct {
	key        string
	start, end int
}

// object decodes a struct or a map member by member. Problems come out
// sorted by member name at each level whatever the document order.
func (d *decoder) object(p *plan, v jsonx.Value, rv reflect.Value) {
	var (
		runs    []problemRun
		seen    uint64   // struct fields already set
		unknown []string // unknown names already reported
		entry   mapScratch
	)
	if p.kind == planMap {
		rv.Set(reflect.MakeMapWithSize(p.typ, v.Len()))
		entry = mapScratch{key: reflect.New(p.typ.Key()).Elem(), elem: reflect.New(p.elem.typ).Elem()}
	}
	v.ForEach(func(rawKey []byte, val jsonx.Value) bool {
		before := len(d.problems)
		var key string
		if p.kind == planStruct {
			key = d.field(p, rawKey, val, rv, &seen, &unknown)
		} else {
			key = memberName(rawKey)
			d.mapEntry(p, key, val, rv, entry)
		}
		if len(d.problems) > before {
			runs = append(runs, problemRun{key: key, start: before, end: len(d.problems)})
		}
		return true
	})
	if len(runs) > 1 {
		sortRuns(d.problems, runs)
	}
}

// memberName decodes a member name from its raw bytes (no quotes).
func memberName(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	s, _ := jsonx.Unquote(q)
	return s
}

// field decodes one struct member and returns its decoded name. A name
// without escapes is looked up without allocating.
func (d *decoder) field(p *plan, rawKey []byte, val jsonx.Value, rv reflect.Value, seen *uint64, unknown *[]string) string {
	var (
		f  fieldPlan
		ok bool
	)
	if bytes.IndexByte(rawKey, '\\') < 0 {
		f, ok = p.fields[string(rawKey)]
	} else {
		f, ok = p.fields[memberName(rawKey)]
	}
	if !ok {
		key := memberName(rawKey)
		for _, u := range *unknown {
			if u == key {
				return key
			}
		}
		*unknown = append(*unknown, key)
		msg := "unknown field \"" + key + "\""
		if s := closest(key, p.names); s != "" {
			msg += " (did you mean \"" + s + "\"?)"
		}
		d.failMember(msg)
		return key
	}
	bit := uint64(1) << uint(f.index)
	if *seen&bit != 0 {
		d.failMember("duplicate field \"" + f.name + "\"")
		return f.name
	}
	*seen |= bit
	d.push(pathSeg{name: f.name, kind: segField})
	d.decode(f.plan, val, rv.Field(f.index))
	d.pop()
	return f.name
}

// mapScratch is one key and one element value reused for every entry of a
// map (SetMapIndex copies both), so an entry costs no reflect.New.
type mapScratch struct {
	key, elem reflect.Value
}

func (d *decoder) mapEntry(p *plan, key string, val jsonx.Value, rv reflect.Value, entry mapScratch) {
	entry.key.SetString(key)
	if rv.MapIndex(entry.key).IsValid() {
		d.failMember("duplicate key \"" + key + "\"")
		return
	}
	entry.elem.SetZero()
	d.push(pathSeg{name: key, kind: segKey})
	d.decode(p.elem, val, entry.elem)
	d.pop()
	rv.SetMapIndex(entry.key, entry.elem)
}

// sortRuns reorders problems[runs[0].start:] so each member's problems
// appear in member-name order (stable for equal names).
func sortRuns(problems []error, runs []problemRun) {
	sorted := make([]problemRun, len(runs))
	copy(sorted, runs)
	for i := 1; i < len(sorted); i++ { // insertion sort: stable, few runs
		for j := i; j > 0 && sorted[j].key < sorted[j-1].key; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	base := runs[0].start
	out := make([]error, 0, len(problems)-base)
	for _, r := range sorted {
		out = append(out, problems[r.start:r.end]...)
	}
	copy(problems[base:], out)
}
