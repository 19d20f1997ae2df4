package server

import (
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// StoredLimit is one period of a bucket as Redis holds it.
type StoredLimit struct {
	Level  float64 // may be fractional, and negative after a debt
	LastUs int64   // Redis TIME of the last refill, µs
}

// storedLimitSize is one period in a stored bucket, '<Bdd': period code,
// level, last refill µs (docs/redis-layout.md).
const storedLimitSize = 1 + 8 + 8

// DecodeBucket reads the string the scripts store at a bucket key
// (bucketKey), period by period. It is the one reader of that layout
// outside Lua: for tests and operators' tools, which cannot read the
// packed doubles in redis-cli.
func DecodeBucket(v string) (map[limit.Period]StoredLimit, error) {
	if len(v)%storedLimitSize != 0 {
		return nil, errs.New("decode bucket: " + strconv.Itoa(len(v)) + " bytes is not a whole number of periods")
	}
	out := make(map[limit.Period]StoredLimit, len(v)/storedLimitSize)
	for at := 0; at < len(v); at += storedLimitSize {
		p := limit.Period(v[at])
		if !p.Valid() {
			return nil, errs.New("decode bucket: unknown period code " + strconv.Itoa(int(v[at])))
		}
		out[p] = StoredLimit{Level: readDouble(v[at+1:]), LastUs: int64(readDouble(v[at+9:]))}
	}
	return out, nil
}
