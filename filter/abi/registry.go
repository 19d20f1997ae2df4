package abi

// registry holds the contexts of one sort (roots or streams) by the host's
// context id: a direct-mapped table, and a map for the contexts whose slot
// another live context holds. Every callback of a request looks its
// context up, and in the VM a map access is a runtime call that hashes the
// id and probes, where a slot costs a comparison: taking the map out of a
// request's path (eight lookups, an insertion and a removal) saved about
// 4.5 k instructions per request, measured with `make bench-instructions`.
// Envoy numbers every context from one counter, so the streams alive on a
// worker at once have nearby ids and fall into distinct slots; the map is
// only used when more than a table's worth are alive together.
type registry[T any] struct {
	slots    [registrySlots]registrySlot[T]
	overflow map[uint32]T
}

const registrySlots = 64

type registrySlot[T any] struct {
	id   uint32
	used bool
	ctx  T
}

func newRegistry[T any]() registry[T] { return registry[T]{} }

// get is the context registered under id.
func (r *registry[T]) get(id uint32) (T, bool) {
	if s := &r.slots[id%registrySlots]; s.used && s.id == id {
		return s.ctx, true
	}
	if len(r.overflow) > 0 {
		ctx, ok := r.overflow[id]
		return ctx, ok
	}
	var none T
	return none, false
}

// put registers ctx under id, in place of what id had.
func (r *registry[T]) put(id uint32, ctx T) {
	s := &r.slots[id%registrySlots]
	if s.used && s.id == id {
		s.ctx = ctx
		return
	}
	if len(r.overflow) > 0 {
		if _, ok := r.overflow[id]; ok {
			r.overflow[id] = ctx
			return
		}
	}
	if !s.used {
		s.id, s.used, s.ctx = id, true, ctx
		return
	}
	if r.overflow == nil {
		r.overflow = map[uint32]T{}
	}
	r.overflow[id] = ctx
}

// remove forgets id's context.
func (r *registry[T]) remove(id uint32) {
	if s := &r.slots[id%registrySlots]; s.used && s.id == id {
		*s = registrySlot[T]{}
		return
	}
	if len(r.overflow) > 0 {
		delete(r.overflow, id)
	}
}

// len counts the registered contexts (for tests: nothing on a request's
// path asks).
func (r *registry[T]) len() int {
	n := len(r.overflow)
	for i := range r.slots {
		if r.slots[i].used {
			n++
		}
	}
	return n
}
