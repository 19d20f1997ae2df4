package config

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"strconv"
)

// stamp fills the versions from the resolved numbers (FNV-1a 64, 16 hex
// digits). Only numbers that shape a bucket go in, so a reload that changes
// nothing about a dimension keeps its buckets, and any change starts fresh
// ones.
func (r *Rules) stamp() {
	var tb, rb [48]byte
	t := tb[:0]
	t = appendAllowance(t, r.Tokens.Minute)
	t = appendAllowance(t, r.Tokens.Day)
	q := rb[:0]
	q = binary.LittleEndian.AppendUint64(q, math.Float64bits(r.Requests.PerSecond))
	q = binary.LittleEndian.AppendUint64(q, uint64(r.Requests.Burst))
	q = binary.LittleEndian.AppendUint64(q, uint64(r.Requests.PerMinute))
	q = binary.LittleEndian.AppendUint64(q, uint64(r.Requests.PerDay))
	q = binary.LittleEndian.AppendUint64(q, uint64(r.Requests.Concurrent))
	r.TokensVersion = hash16('t', t)
	r.RequestsVersion = hash16('r', q)
	r.Version = hash16('a', append(append([]byte(nil), t...), q...))
}

func appendAllowance(b []byte, a Allowance) []byte {
	flag := byte(0)
	if a.Unlimited {
		flag = 1
	}
	b = append(b, flag)
	return binary.LittleEndian.AppendUint64(b, uint64(a.Capacity))
}

func hash16(domain byte, b []byte) string {
	h := fnv.New64a()
	h.Write([]byte{domain})
	h.Write(b)
	s := strconv.FormatUint(h.Sum64(), 16)
	for len(s) < 16 {
		s = "0" + s
	}
	return s
}
