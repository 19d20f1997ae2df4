package wire

import (
	"unicode/utf8"
	"unsafe"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// An admission's ops are nearly all of its body, and every encoder of this
// protocol writes them the same way: appendOps' members in its order, no
// whitespace, plain strings, integers as digits. readOp decodes an op
// spelled exactly so by comparing its fixed bytes and reading each value
// where it stands, where the walk reads each member's name, looks it up,
// checks the value to find its end and then decodes it. Numbers are read
// by the walk's own readers (jsonx.NumberEnd, parseInt64, parseKind,
// parseFloat). At the first byte that differs readOp gives up and the walk
// decodes the op as before, so what is accepted and what it means do not
// change (FuzzAnOpReadByItsShapeIsTheOpTheWalkReads). The walk's decode was
// the largest single item of the service's CPU per admission.

// shape reads a document that must be spelled one way. Once a read finds
// another spelling, bad is set and every later read fails too, so a decoder
// checks bad once at the end.
type shape struct {
	d   []byte
	i   int
	bad bool
}

// lit consumes lit, which must come next.
func (s *shape) lit(lit string) {
	if !s.opt(lit) {
		s.bad = true
	}
}

// opt consumes lit if it comes next and reports whether it did.
func (s *shape) opt(lit string) bool {
	if s.bad || len(s.d)-s.i < len(lit) || string(s.d[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// text consumes a string without escapes (what jsonx.AppendString writes
// for text that needs none) and returns its bytes, a view of the document.
// An escape, a control byte or bytes that are not UTF-8 are another
// spelling, which the walk checks and decodes.
func (s *shape) text() []byte {
	d, i := s.d, s.i
	if s.bad || i >= len(d) || d[i] != '"' {
		s.bad = true
		return nil
	}
	wide := false
	for j := i + 1; j < len(d); j++ {
		switch c := d[j]; {
		case c == '"':
			t := d[i+1 : j : j]
			if wide && !utf8.Valid(t) {
				s.bad = true
				return nil
			}
			s.i = j + 1
			return t
		case c < 0x20 || c == '\\':
			s.bad = true
			return nil
		case c >= utf8.RuneSelf:
			wide = true
		}
	}
	s.bad = true
	return nil
}

// number consumes a JSON number and returns its bytes; what it means is
// read as the walk reads it (parseInt64, parseKind, parseFloat).
func (s *shape) number() []byte {
	if s.bad {
		return nil
	}
	end, ok := jsonx.NumberEnd(s.d, s.i)
	if !ok {
		s.bad = true
		return nil
	}
	b := s.d[s.i:end:end]
	s.i = end
	return b
}

// numeral consumes a number that parse, the walk's reader of its member,
// accepts; one the walk would refuse is another spelling.
func numeral[T any](s *shape, parse func([]byte) (T, bool)) T {
	v, ok := parse(s.number())
	if !ok {
		s.bad = true
	}
	return v
}

// name consumes a period's or dimension's name that parse knows.
func name[T any](s *shape, parse func(string) (T, bool)) T {
	var n T
	t := s.text()
	if s.bad || len(t) == 0 {
		s.bad = true
		return n
	}
	n, ok := parse(unsafe.String(&t[0], len(t)))
	if !ok {
		s.bad = true
	}
	return n
}

// readOp decodes the op at the start of d into o when it is spelled as
// appendOps writes it, and returns its length and how deep its containers
// nest; ok is false at any other spelling, o then holding a partial op.
func readOp(d []byte, o *Op) (n, depth int, ok bool) {
	s := shape{d: d}
	s.lit(`{"key":`)
	o.Key = string(s.text())
	s.lit(`,"kind":`)
	o.Kind = numeral(&s, parseKind)
	s.lit(`,"dimension":`)
	o.Dimension = name(&s, limit.ParseDimension)
	s.lit(`,"limits":[`)
	depth = 2
	if s.opt("]") {
		o.Limits = make([]Limit, 0)
	} else {
		depth = 3
		o.Limits = make([]Limit, 0, 2)
		for !s.bad {
			var l Limit
			s.lit(`{"budget":`)
			l.Budget = name(&s, limit.ParsePeriod)
			s.lit(`,"capacity":`)
			l.Capacity = numeral(&s, parseInt64)
			s.lit(`,"refill_per_sec":`)
			l.RefillPerSec = numeral(&s, parseFloat)
			s.lit("}")
			o.Limits = append(o.Limits, l)
			if s.opt("]") {
				break
			}
			s.lit(",")
		}
	}
	s.lit(`,"amount":`)
	o.Amount = numeral(&s, parseInt64)
	o.Private = s.opt(`,"private":true`)
	s.lit("}")
	return s.i, depth, !s.bad
}
