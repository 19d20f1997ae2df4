package estimate

import (
	"encoding/binary"
	"math/bits"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// jsonx.Value.ForEach finds the end of every element before handing it
// over, so walking the messages array with it reads each message's bytes
// three times before Text does: once to skip the whole array as a top-level
// member, once to skip each message as an element, once to skip each field.
// The walk over the request object and its messages therefore steps through
// the validated document with the helpers below, finding the end of each
// value as it reads it, and hands jsonx.Values to the rest of the walk only
// for the values it does not descend into.
//
// Every function takes a document jsonx.Parse accepted and an index into
// it; on anything else they return len(d) or -1 rather than panic.

// skipWS returns the index of the first non-whitespace byte at or after i.
func skipWS(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\n' || d[i] == '\r' || d[i] == '\t') {
		i++
	}
	return i
}

// skipString returns the index after the string that opens at d[i].
func skipString(d []byte, i int) int {
	open := i
	i++
	for {
		for i+8 <= len(d) {
			if m := hasByte(binary.LittleEndian.Uint64(d[i:]), '"'); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for i < len(d) && d[i] != '"' {
			i++
		}
		if i >= len(d) {
			return len(d)
		}
		// The quote closes the string unless an odd number of
		// backslashes escapes it.
		k := i - 1
		for k > open && d[k] == '\\' {
			k--
		}
		i++
		if (i-k)%2 == 0 {
			return i
		}
	}
}

// skipValue returns the index after the value that starts at d[i].
func skipValue(d []byte, i int) int {
	if i >= len(d) {
		return len(d)
	}
	switch d[i] {
	case '"':
		return skipString(d, i)
	case '{', '[':
		depth := 0
		for i < len(d) {
			// Brackets and quotes are found eight bytes at a time; '{'
			// and '[' differ only in bit 5, as do '}' and ']'.
			for i+8 <= len(d) {
				x := binary.LittleEndian.Uint64(d[i:])
				y := x | lsb*0x20
				if m := hasByte(x, '"') | hasByte(y, '{') | hasByte(y, '}'); m != 0 {
					i += bits.TrailingZeros64(m) >> 3
					break
				}
				i += 8
			}
			if i >= len(d) {
				break
			}
			switch d[i] {
			case '"':
				i = skipString(d, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(d)
	}
	// A number or a literal runs to the next delimiter.
	for i < len(d) && d[i] != ',' && d[i] != '}' && d[i] != ']' && d[i] != ' ' && d[i] != '\n' && d[i] != '\r' && d[i] != '\t' {
		i++
	}
	return i
}

// valueAt is the jsonx.Value of d[start:end], a value skipValue delimited.
func valueAt(d []byte, start, end int) jsonx.Value {
	if start >= end || end > len(d) {
		return jsonx.Value{}
	}
	k := jsonx.Number
	switch d[start] {
	case '"':
		k = jsonx.String
	case '{':
		k = jsonx.Object
	case '[':
		k = jsonx.Array
	case 't':
		k = jsonx.True
	case 'f':
		k = jsonx.False
	case 'n':
		k = jsonx.Null
	}
	return jsonx.Value{Kind: k, Raw: d[start:end]}
}

// firstItem returns the start of the first member (its key's quote) or
// element of the object or array that opens at d[i], or -1 when it is empty.
func firstItem(d []byte, i int) int {
	j := skipWS(d, i+1)
	if j >= len(d) || d[j] == '}' || d[j] == ']' {
		return -1
	}
	return j
}

// nextItem returns the start of the member or element after the value that
// ends at end, or -1 after the last one.
func nextItem(d []byte, end int) int {
	j := skipWS(d, end)
	if j >= len(d) || d[j] != ',' {
		return -1
	}
	return skipWS(d, j+1)
}

// memberAt reads the member whose key opens at d[k]: the key's raw bytes
// (as ForEach gives them) and the start of its value.
func memberAt(d []byte, k int) (key []byte, value int) {
	e := skipString(d, k)
	if e-1 < k+1 {
		return nil, len(d)
	}
	colon := skipWS(d, e)
	return d[k+1 : e-1], skipWS(d, colon+1)
}

// closeAfter returns the index after the bracket that closes an object or
// array whose last member or element ends at last (or whose opening
// bracket is at last-1 when it is empty).
func closeAfter(d []byte, last int) int {
	return min(skipWS(d, last)+1, len(d))
}

// hasByte flags the bytes of x equal to b; the lowest flag is exact.
func hasByte(x uint64, b byte) uint64 {
	y := x ^ (lsb * uint64(b))
	return (y - lsb) &^ y & msb
}
