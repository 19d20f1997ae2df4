package identity

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
	hashes map[string]string
}

// NewKeyCache returns a cache holding at most n keys (at least one).
func NewKeyCache(n int) *KeyCache {
	return &KeyCache{max: max(1, n)}
}

// Hash is HashKey(raw), from the cache when raw was hashed before.
func (c *KeyCache) Hash(raw string) string {
	if h, ok := c.hashes[raw]; ok {
		return h
	}
	h := HashKey(raw)
	if c.hashes == nil || len(c.hashes) >= c.max {
		c.hashes = make(map[string]string, min(c.max, 64))
	}
	// A copy: raw may be a view of a larger host buffer the map would pin.
	c.hashes[string([]byte(raw))] = h
	return h
}

// Len is the number of keys remembered.
func (c *KeyCache) Len() int { return len(c.hashes) }
