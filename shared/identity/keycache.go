package identity

import "github.com/tokenbudget/tokenbudget/shared/strcmp"

// KeyCache remembers the hashes of the keys it was asked for, so a client
// that sends the same key on every request costs one SHA-256 per cache
// lifetime instead of one per request. It is bounded: once it holds max
// keys it starts over empty, so a client cycling through fresh keys costs
// a hash per request, as without the cache, and never grows it.
//
// The raw keys live in the map, in the process's memory only, like the
// request that carried them; nothing reads them back but Hash. A KeyCache
// is for one goroutine (one proxy-wasm VM is single threaded).
type KeyCache struct {
	max    int
	hashes map[string]*keyHash
	// recent holds keys found or hashed lately, direct-mapped by length
	// and last byte: in the VM a string-map lookup hashes the whole key
	// and cost a request about 3 k instructions, where a slot costs one
	// comparison of the key. A slot may outlive the map's starting over;
	// it still holds a key and its own hash.
	recent [recentKeys]*keyHash
}

// keyHash is a remembered key (a copy: the request's key may be a view of
// a larger host buffer the cache would pin) and its hash.
type keyHash struct{ raw, hash string }

const recentKeys = 8

// NewKeyCache returns a cache holding at most n keys (at least one).
func NewKeyCache(n int) *KeyCache {
	return &KeyCache{max: max(1, n)}
}

// Hash is HashKey(raw), from the cache when raw was hashed before.
func (c *KeyCache) Hash(raw string) string {
	slot := &c.recent[recentKey(raw)]
	if k := *slot; k != nil && strcmp.Equal(k.raw, raw) {
		return k.hash
	}
	k, ok := c.hashes[raw]
	if !ok {
		if c.hashes == nil || len(c.hashes) >= c.max {
			c.hashes = make(map[string]*keyHash, min(c.max, 64))
		}
		k = &keyHash{raw: string([]byte(raw)), hash: HashKey(raw)}
		c.hashes[k.raw] = k
	}
	*slot = k
	return k.hash
}

// recentKey is raw's slot among the recent keys.
func recentKey(raw string) int {
	if raw == "" {
		return 0
	}
	return (len(raw)*31 + int(raw[len(raw)-1])) % recentKeys
}

// Len is the number of keys remembered.
func (c *KeyCache) Len() int { return len(c.hashes) }
