package abi

import (
	"encoding/binary"
	"unsafe"
)

// Pair is a header a filter adds to a map it writes whole (see
// HeaderAdder).
type Pair struct{ Name, Value string }

// Limits of the pairs a host decodes: cpp-host's PairsUtil turns an
// encoding over 1 MiB or over 1024 pairs into an empty list, and Envoy then
// empties the map. A merge that would pass either is not written.
const (
	maxPairsBytes = 1 << 20
	maxPairsCount = 1024
)

// room is what the pairs to add take in an encoding: their sizes (eight
// bytes a pair) go before the listed map's data, their names and values
// (each ended by a NUL) after it. lens has bit k set when a name is k
// bytes long (bit 63 for 63 and more), so a listed name is compared with
// theirs only when its length is one of them.
type room struct {
	before, after int
	lens          uint64
}

func roomFor(add []Pair) (r room) {
	for i := range add {
		k := len(add[i].Name)
		r.after += k + len(add[i].Value) + 2
		r.lens |= 1 << min(k, 63)
	}
	r.before = 8 * len(add)
	return r
}

// mergeInPlace turns buf, which holds at buf[before:before+listed] a map's
// encoding as the host wrote it (r = roomFor(add), and buf holds
// r.before+listed+r.after bytes), into the encoding of that map followed
// by add's pairs, and returns it (a prefix of buf). The listed names and
// values stay where they are: only the listed sizes move down, add's sizes
// follow them and add's bytes follow the data, so the merge copies the
// sizes and add, never the backend's headers.
//
// kept is dst with the listed pairs appended, viewing buf: they all stay in
// the map. ok is false, with buf's listing untouched and dst as given, when
// the listing is malformed, when it holds one of add's names (each of add's
// headers must replace every value of its name: mergeFresh drops them), or
// when the result would pass the limits a host decodes.
func mergeInPlace(dst [][2]string, buf []byte, listed int, add []Pair, r room) (kept [][2]string, enc []byte, ok bool) {
	before, after := r.before, r.after
	if len(add) > maxPairsCount || 4+before+after > maxPairsBytes {
		return dst, nil, false
	}
	if listed == 0 {
		// An empty map: the host allocated nothing.
		enc = make([]byte, 4+before+after)
		return dst, enc[:writeAdded(enc, 0, 4, 4+before, add)], true
	}
	l := buf[before : before+listed]
	if len(l) < 4 {
		return dst, nil, false
	}
	n := uint64(binary.LittleEndian.Uint32(l))
	if n > uint64(len(l)-4)/10 || n+uint64(len(add)) > maxPairsCount || before+listed+after > maxPairsBytes {
		return dst, nil, false
	}
	at := 4 + 8*n
	end := uint64(len(l))
	kept = dst
	for i := uint64(0); i < n; i++ {
		kv := binary.LittleEndian.Uint64(l[4+8*i:])
		ks, vs := kv&0xffffffff, kv>>32
		if ks >= end-at || l[at+ks] != 0 {
			return dst, nil, false
		}
		name := unsafe.String(&l[at], ks)
		if r.lens&(1<<min(ks, 63)) != 0 && namesOneOf(name, add) {
			return dst, nil, false
		}
		at += ks + 1
		if vs >= end-at || l[at+vs] != 0 {
			return dst, nil, false
		}
		kept = append(kept, [2]string{name, unsafe.String(&l[at], vs)})
		at += vs + 1
	}
	if at != end {
		return dst, nil, false
	}
	copy(buf[4:4+8*n], l[4:4+8*n])
	return kept, buf[:writeAdded(buf, n, int(4+8*n), before+listed, add)], true
}

// writeAdded writes the count, n listed pairs plus add's, at buf[0:4],
// add's sizes at buf[sizesAt:] and add's names and values at buf[at:], and
// returns where they end. buf has room for all of them. (Two copies and two
// stores a pair: in the VM an append is a copy and a capacity check.)
func writeAdded(buf []byte, n uint64, sizesAt, at int, add []Pair) int {
	binary.LittleEndian.PutUint32(buf, uint32(n)+uint32(len(add)))
	for i := range add {
		name, value := add[i].Name, add[i].Value
		binary.LittleEndian.PutUint64(buf[sizesAt+8*i:], uint64(len(name))|uint64(len(value))<<32)
		at += copy(buf[at:], name)
		buf[at] = 0
		at += 1 + copy(buf[at+1:], value)
		buf[at] = 0
		at++
	}
	return at
}

// namesOneOf says whether name is one of add's names.
func namesOneOf(name string, add []Pair) bool {
	for i := range add {
		if name == add[i].Name {
			return true
		}
	}
	return false
}

// mergeFresh is the encoding of listed without the pairs named by add,
// followed by add: what mergeInPlace writes when it cannot write in place.
// kept is dst with the listed pairs that stay. ok is false when the result
// would pass a host's limits.
func mergeFresh(dst [][2]string, listed [][2]string, add []Pair) (kept [][2]string, enc []byte, ok bool) {
	kept = dst
	for _, p := range listed {
		if !namesOneOf(p[0], add) {
			kept = append(kept, p)
		}
	}
	all := append(make([][2]string, 0, len(kept)-len(dst)+len(add)), kept[len(dst):]...)
	for _, p := range add {
		all = append(all, [2]string{p.Name, p.Value})
	}
	enc = AppendPairs(nil, all)
	if len(all) > maxPairsCount || len(enc) > maxPairsBytes {
		return dst, nil, false
	}
	return kept, enc, true
}
