package server

import (
	"hash/fnv"
	"strconv"
	"strings"
)

// keyPrefix namespaces everything the service writes, so it can share a
// Redis with other tenants and an operator can find its keys.
const keyPrefix = "tb:"

// slotTag is the Redis Cluster hash tag of an op's bucket: the op key itself
// when it has no braces (readable in redis-cli), else a hash of it, because a
// brace inside the key would end the tag early and could split the bucket
// from its hold records.
func slotTag(opKey string) string {
	if !strings.ContainsAny(opKey, "{}") {
		return "{" + opKey + "}"
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(opKey))
	return "{#" + strconv.FormatUint(h.Sum64(), 16) + "}" + opKey
}

// bucketKey is the string holding every period of one op's bucket
// (docs/redis-layout.md).
func bucketKey(opKey string) string {
	if !strings.ContainsAny(opKey, "{}") {
		return keyPrefix + "b:{" + opKey + "}" // one allocation, the same text as slotTag's
	}
	return keyPrefix + "b:" + slotTag(opKey)
}

// appendBucketKey appends bucketKey(opKey) without building the string.
func appendBucketKey(dst []byte, opKey string) []byte {
	if strings.ContainsAny(opKey, "{}") {
		return append(dst, bucketKey(opKey)...)
	}
	dst = append(dst, keyPrefix+"b:{"...)
	return append(append(dst, opKey...), '}')
}

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
