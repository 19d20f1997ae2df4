package wire

import (
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// An admission's ops are nearly all of its body, and every encoder of this
// protocol writes them the same way: appendOps' members in its order, no
// whitespace, plain strings, integers as digits. readOp decodes an op
// spelled exactly so in one pass of byte comparisons, where the walk reads
// each member's name, looks it up and reads its value twice (once to find
// its end, once to decode it); at the first byte that differs it gives up
// and the walk decodes the op as before, so what is accepted and what it
// means do not change (FuzzAnOpReadByItsShapeIsTheOpTheWalkReads). The
// walk's decode was the largest single item of the service's CPU per
// admission.

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

// digits consumes a JSON integer that int64 holds, with its sign when
// signed; a fraction or an exponent after it is another spelling (and an
// error for the walk: the wire's integers have none).
func (s *shape) digits(signed bool) int64 {
	d, i := s.d, s.i
	if s.bad {
		return 0
	}
	neg := signed && i < len(d) && d[i] == '-'
	if neg {
		i++
	}
	start := i
	var u uint64 // 19 digits at most, which uint64 holds
	for i < len(d) && d[i]-'0' < 10 && i-start < 19 {
		u = u*10 + uint64(d[i]-'0')
		i++
	}
	if k := i - start; k == 0 || k > 1 && d[start] == '0' ||
		i < len(d) && (d[i]-'0' < 10 || d[i] == '.' || d[i]|0x20 == 'e') ||
		u > math.MaxInt64 && !(neg && u == 1<<63) {
		s.bad = true
		return 0
	}
	s.i = i
	if neg {
		return -int64(u)
	}
	return int64(u)
}

// number consumes a JSON number and returns what strconv.ParseFloat makes
// of it (as decodeFloat does); one out of float64's range is another
// spelling, which the walk refuses. A mantissa of up to 2^53 with a power
// of ten up to 22 either way is one exact division or multiplication of two
// exact float64s, which IEEE 754 rounds correctly, so it is computed here;
// ParseFloat, which spent some 500 instructions on each of a plan's rates,
// reads the rest.
func (s *shape) number() float64 {
	d, i := s.d, s.i
	if s.bad {
		return 0
	}
	neg := i < len(d) && d[i] == '-'
	if neg {
		i++
	}
	var m uint64 // the digits, while they number at most 19
	nd, frac, exp := 0, 0, 0
	j := i
	for ; j < len(d) && d[j]-'0' < 10; j++ {
		m = m*10 + uint64(d[j]-'0')
		nd++
	}
	ok := j > i && (d[i] != '0' || j == i+1)
	if ok && j < len(d) && d[j] == '.' {
		k := j + 1
		for ; k < len(d) && d[k]-'0' < 10; k++ {
			m = m*10 + uint64(d[k]-'0')
			nd++
		}
		ok, frac, j = k > j+1, k-j-1, k
	}
	if ok && j < len(d) && d[j]|0x20 == 'e' {
		j++
		eneg := j < len(d) && d[j] == '-'
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		k := j
		for ; k < len(d) && d[k]-'0' < 10; k++ {
			if k-j < 4 {
				exp = exp*10 + int(d[k]-'0')
			}
		}
		ok = k > j
		if k-j >= 4 {
			nd = 20 // an exponent this long: ParseFloat decides
		}
		if eneg {
			exp = -exp
		}
		j = k
	}
	if !ok {
		s.bad = true
		return 0
	}
	var f float64
	switch e := exp - frac; {
	case nd <= 19 && m <= 1<<53 && e >= 0 && e <= 22:
		f = float64(m) * exactPow10[e]
	case nd <= 19 && m <= 1<<53 && e < 0 && e >= -22:
		f = float64(m) / exactPow10[-e]
	default:
		var err error
		f, err = strconv.ParseFloat(unsafe.String(&d[s.i], j-s.i), 64)
		if err != nil {
			s.bad = true
			return 0
		}
		s.i = j
		return f
	}
	s.i = j
	if neg {
		return -f
	}
	return f
}

// exactPow10 holds the powers of ten that float64 holds exactly.
var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

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
	k := s.digits(false)
	if k > 255 {
		s.bad = true
	}
	o.Kind = limit.Kind(k)
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
			l.Capacity = s.digits(true)
			s.lit(`,"refill_per_sec":`)
			l.RefillPerSec = s.number()
			s.lit("}")
			o.Limits = append(o.Limits, l)
			if s.opt("]") {
				break
			}
			s.lit(",")
		}
	}
	s.lit(`,"amount":`)
	o.Amount = s.digits(true)
	o.Private = s.opt(`,"private":true`)
	s.lit("}")
	return s.i, depth, !s.bad
}
