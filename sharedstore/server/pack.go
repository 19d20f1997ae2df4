package server

import (
	"encoding/binary"
	"math"

	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// The scripts read their numbers as packed little-endian doubles
// (struct.unpack) rather than as text: parsing decimal text with strtod and
// formatting it back were the largest single cost of an admission inside
// Redis. Every number that travels is an integer below 2^53 or a float64
// refill rate, so a double carries each one exactly. The layouts are
// documented in admit.lua and common.lua.

func appendDouble(dst []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
}

func appendDoubles(dst []byte, fs ...float64) []byte {
	for _, f := range fs {
		dst = appendDouble(dst, f)
	}
	return dst
}

func readDouble(s string) float64 {
	return math.Float64frombits(uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56)
}

// limitSize is one packed limit, '<Bdd': period code, capacity, refill per
// second. The period travels as its code (shared/limit.Period), the same
// byte that names the limit inside a stored bucket (bucket.go).
const limitSize = 1 + 8 + 8

func appendLimits(dst []byte, ls []limit.Limit) []byte {
	for _, l := range ls {
		dst = append(dst, byte(l.Budget))
		dst = appendDoubles(dst, float64(l.Capacity), l.RefillPerSec)
	}
	return dst
}

// appendPlan is admit.lua's ARGV[1].
func appendPlan(dst []byte, nreq, ntok int, holdTTL, margin int64, ops []limit.Op) []byte {
	dst = append(dst, byte(nreq), byte(ntok))
	dst = appendDoubles(dst, float64(holdTTL), float64(margin))
	for _, op := range ops {
		private := byte(0)
		if op.Private {
			private = 1
		}
		dst = append(dst, byte(op.Kind), private)
		dst = appendDouble(dst, float64(op.Amount))
		dst = append(dst, byte(len(op.Limits)))
		dst = appendLimits(dst, op.Limits)
	}
	return dst
}

// appendRecord is a hold record: what end.lua needs to settle or release
// it, and the plan's overage rule, so a reload never changes how it settles.
// Keys are at most wire.MaxKeyLen bytes before the prefix, well within the
// '<H' length.
// Its first byte is 2 + the skip-overage flag: 0 and 1 were the layout that
// named limits by hash field, still read for holds admitted before it.
func appendRecord(dst []byte, entries []limit.HoldEntry, overage limit.Overage) []byte {
	flag := byte(2)
	if overage == limit.OverageSkip {
		flag = 3
	}
	dst = append(dst, flag, byte(len(entries)))
	for _, e := range entries {
		at := len(dst)
		dst = appendBucketKey(binary.LittleEndian.AppendUint16(dst, 0), e.Key)
		binary.LittleEndian.PutUint16(dst[at:], uint16(len(dst)-at-2))
		dst = append(dst, byte(e.Kind))
		dst = appendDouble(dst, float64(e.Amount))
		dst = append(dst, byte(len(e.Limits)))
		dst = appendLimits(dst, e.Limits)
	}
	return dst
}

// planSize and recordSize are the packed lengths, so each blob is
// allocated once.
func planSize(ops []limit.Op) int {
	n := 2 + 16
	for _, op := range ops {
		n += 11 + limitsSize(op.Limits)
	}
	return n
}

func recordSize(entries []limit.HoldEntry) int {
	n := 2
	for _, e := range entries {
		n += 2 + len(keyPrefix) + len("b:{#0123456789abcdef}") + len(e.Key) + 10 + limitsSize(e.Limits)
	}
	return n
}

func limitsSize(ls []limit.Limit) int { return len(ls) * limitSize }
