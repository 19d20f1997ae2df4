package server

import (
	"hash/fnv"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// keyPrefix namespaces everything the service writes, so it can share a
// Redis with other tenants and an operator can find its keys.
const keyPrefix = "tb:"

// slotTag is the Redis Cluster hash tag of an op's bucket: the op key itself
// when it has no braces (readable in redis-cli), else a hash of it, because a
// brace inside the key would end the tag early and could split the bucket
// from its hold records.
func slotTag(opKey string) string {
	if !hasBrace(opKey) {
		return "{" + opKey + "}"
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(opKey))
	return "{#" + strconv.FormatUint(h.Sum64(), 16) + "}" + opKey
}

// bucketKey is the string holding every period of one op's bucket
// (docs/redis-layout.md).
func bucketKey(opKey string) string {
	if !hasBrace(opKey) {
		return keyPrefix + "b:{" + opKey + "}" // one allocation, the same text as slotTag's
	}
	return keyPrefix + "b:" + slotTag(opKey)
}

// appendBucketKey appends bucketKey(opKey) without building the string.
func appendBucketKey(dst []byte, opKey string) []byte {
	if hasBrace(opKey) {
		return append(dst, bucketKey(opKey)...)
	}
	dst = append(dst, keyPrefix+"b:{"...)
	return append(append(dst, opKey...), '}')
}

// bucketKeys appends every op's bucketKey to keys, the keys without braces
// (all that the filter writes) as views of one array: they are built on
// every admission, and a string each was a tenth of its allocations.
func bucketKeys(keys []string, ops []limit.Op) []string {
	n := 0
	for _, op := range ops {
		n += len(keyPrefix+"b:{}") + len(op.Key)
	}
	buf := make([]byte, 0, n) // never outgrown: the views stay valid
	for _, op := range ops {
		if hasBrace(op.Key) {
			keys = append(keys, bucketKey(op.Key))
			continue
		}
		start := len(buf)
		buf = appendBucketKey(buf, op.Key)
		keys = append(keys, unsafe.String(&buf[start], len(buf)-start))
	}
	return keys
}

// hasBrace reports whether a key holds a brace (strings.ContainsAny was a
// percent of the service's CPU here).
func hasBrace(s string) bool { return strings.IndexByte(s, '{') >= 0 || strings.IndexByte(s, '}') >= 0 }

// holdKey is a single server's hold record: one key with every entry.
func holdKey(id string) string { return keyPrefix + "h:" + id }

// opHoldKey is a cluster hold record: one per reserved op, in its bucket's
// slot, so reserving and ending it run on the node that owns the bucket.
func opHoldKey(opKey, id string) string { return keyPrefix + "h:" + slotTag(opKey) + ":" + id }

// releasedKey is a single server's release tombstone: a release that found
// no hold record leaves it, and an admission naming the id commits nothing.
func releasedKey(id string) string { return keyPrefix + "released:" + id }

// opReleasedKey is a cluster release tombstone, one per op beside the op's
// hold record (same slot), because each op is admitted on its own node.
func opReleasedKey(opKey, id string) string {
	return keyPrefix + "released:" + slotTag(opKey) + ":" + id
}
