package wire

import (
	"unicode/utf8"
	"unsafe"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// readAdmitRequest is decodeAdmitRequest's twin for the one spelling every
// encoder of this protocol writes (AppendAdmitHold: its members in its
// order, no whitespace, strings without escapes, integers as digits). It
// compares the fixed bytes and reads each value where it stands, one pass
// over the body, where the reference parses the document and then finds
// each value's end again at every level. Numbers and names are read by the
// reference's own readers (jsonx.NumberEnd, parseInt64, parseKind,
// parseFloat, limit.ParseDimension, limit.ParsePeriod). ok is false at the
// first byte spelled another way, and the caller then decodes with the
// reference, so what is accepted and what it means do not change
// (FuzzTheAdmitShapeReadsAsTheReference holds it there).
func readAdmitRequest(d []byte) (r AdmitRequest, ok bool) {
	s := shape{d: d}
	s.lit("{")
	more := false
	if s.member(`"hold_id":`, &more) {
		r.HoldID = string(s.text())
	}
	if s.member(`"requests":`, &more) {
		r.Requests = s.ops(2)
	}
	if s.member(`"tokens":`, &more) {
		r.Tokens = s.ops(8)
	}
	if s.member(`"overage":`, &more) {
		r.Overage = string(s.text())
	}
	if s.member(`"spend":`, &more) {
		r.Spend = s.spendAdmit()
	}
	s.lit("}")
	if s.bad || s.i != len(d) {
		return AdmitRequest{}, false
	}
	return r, true
}

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
// spelling, which the reference checks and decodes.
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
// read as the reference reads it (parseInt64, parseKind, parseFloat).
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

// numeral consumes a number that parse, the reference's reader of its
// member, accepts; one the reference would refuse is another spelling.
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

// member consumes `name` (quoted, with its colon), after a comma unless
// it opens the object (*more false), if it comes next; it then sets *more.
func (s *shape) member(name string, more *bool) bool {
	at := s.i
	if *more && !s.opt(",") {
		return false
	}
	if !s.opt(name) {
		s.i = at
		return false
	}
	*more = true
	return true
}

// ops consumes a non-empty array of ops as appendOps writes it; hint is
// its usual length.
func (s *shape) ops(hint int) []Op {
	s.lit("[")
	ops := make([]Op, 0, hint)
	for !s.bad {
		ops = append(ops, Op{})
		s.op(&ops[len(ops)-1])
		if s.opt("]") {
			break
		}
		s.lit(",")
	}
	return ops
}

// op consumes one op as appendOps writes it.
func (s *shape) op(o *Op) {
	s.lit(`{"key":`)
	o.Key = string(s.text())
	s.lit(`,"kind":`)
	o.Kind = numeral(s, parseKind)
	s.lit(`,"dimension":`)
	o.Dimension = name(s, limit.ParseDimension)
	s.lit(`,"limits":[`)
	if s.opt("]") {
		o.Limits = make([]Limit, 0)
	} else {
		o.Limits = make([]Limit, 0, 2)
		for !s.bad {
			var l Limit
			s.lit(`{"budget":`)
			l.Budget = name(s, limit.ParsePeriod)
			s.lit(`,"capacity":`)
			l.Capacity = numeral(s, parseInt64)
			s.lit(`,"refill_per_sec":`)
			l.RefillPerSec = numeral(s, parseFloat)
			s.lit("}")
			o.Limits = append(o.Limits, l)
			if s.opt("]") {
				break
			}
			s.lit(",")
		}
	}
	s.lit(`,"amount":`)
	o.Amount = numeral(s, parseInt64)
	o.Private = s.opt(`,"private":true`)
	s.lit("}")
}

// spendAdmit consumes the spend part as appendSpendAdmit writes it.
func (s *shape) spendAdmit() *SpendAdmit {
	a := &SpendAdmit{}
	s.lit("{")
	if s.opt(`"team":`) {
		a.Team = string(s.text())
		s.lit(",")
	}
	if s.opt(`"api_key":`) {
		a.APIKey = string(s.text())
		s.lit(",")
	}
	if s.opt(`"user":`) {
		a.User = string(s.text())
		s.lit(",")
	}
	s.lit(`"start_unix_nano":`)
	a.Start = numeral(s, parseInt64)
	s.lit(`,"day":`)
	a.Day = numeral(s, parseInt64)
	s.lit(`,"month":`)
	a.Month = numeral(s, parseInt64)
	s.lit(`,"limits":`)
	if !s.opt("null") {
		s.lit("[")
		a.Limits = make([]SpendLimit, 0, 3)
		for !s.bad && !s.opt("]") {
			if len(a.Limits) > 0 {
				s.lit(",")
			}
			var l SpendLimit
			s.lit(`{"slot":`)
			l.Slot = string(s.text())
			s.lit(`,"limit_nano_usd":`)
			l.LimitNanoUSD = numeral(s, parseInt64)
			s.lit("}")
			a.Limits = append(a.Limits, l)
		}
	}
	a.Fleet = s.opt(`,"fleet":true`)
	if s.opt(`,"reserve_nano_usd":`) {
		a.Reserve = numeral(s, parseInt64)
	}
	s.lit("}")
	return a
}
