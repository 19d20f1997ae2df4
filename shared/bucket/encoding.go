package bucket

import (
	"encoding/binary"
	"math"

	"github.com/tokenbudget/tokenbudget/shared/errs"
)

// Layout of one Op's value in shared data: all its Limits in one value, so
// both periods of a dimension change in ONE compare-and-swap.
//
//	byte 0      encodingVersion
//	byte 1      n, the number of Limits
//	n × 16      level (float64 bits, little endian), last (int64 ns, little endian)
//
// A level may be negative: a bucket in debt (an overage charged whole) keeps
// its debt, so a finite negative level decodes like any other.
// The version byte lets a later layout refuse to misread an older one.
const (
	encodingVersion = 1
	headerLen       = 2
	stateLen        = 16
	// MaxLimits bounds the Limits of one Op (second, minute, day at most today).
	MaxLimits = 8
)

// Errors Decode answers with; a value that is not ours is an error, never a
// guess, so a corrupt value cannot silently refill a bucket.
var (
	ErrShortValue   = errs.New("bucket value: too short")
	ErrVersion      = errs.New("bucket value: unknown layout version")
	ErrLimitCount   = errs.New("bucket value: limit count does not match the op")
	ErrLengthValue  = errs.New("bucket value: length does not match its limit count")
	ErrInvalidLevel = errs.New("bucket value: level is not a finite number")
)

// EncodedLen is the size of a value holding n Limits.
func EncodedLen(n int) int { return headerLen + n*stateLen }

// AppendEncoded appends the value for states to dst (reuse dst to encode
// without allocating). More than MaxLimits states are truncated; plans never
// carry that many.
func AppendEncoded(dst []byte, states []State) []byte {
	n := min(len(states), MaxLimits)
	dst = append(dst, encodingVersion, byte(n))
	for i := 0; i < n; i++ {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(states[i].Level))
		dst = binary.LittleEndian.AppendUint64(dst, uint64(states[i].Last))
	}
	return dst
}

// Decode reads a value into states, which must have exactly as many entries
// as the value has Limits (the op's Limits: the key carries the parameter
// version, so a matching key means a matching layout).
func Decode(src []byte, states []State) error {
	if len(src) < headerLen {
		return ErrShortValue
	}
	if src[0] != encodingVersion {
		return ErrVersion
	}
	n := int(src[1])
	if n != len(states) {
		return ErrLimitCount
	}
	if len(src) != EncodedLen(n) {
		return ErrLengthValue
	}
	for i := 0; i < n; i++ {
		off := headerLen + i*stateLen
		level := math.Float64frombits(binary.LittleEndian.Uint64(src[off:]))
		if math.IsNaN(level) || math.IsInf(level, 0) {
			return ErrInvalidLevel
		}
		states[i] = State{Level: level, Last: int64(binary.LittleEndian.Uint64(src[off+8:]))}
	}
	return nil
}
