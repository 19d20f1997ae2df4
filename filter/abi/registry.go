package abi

// registry holds the contexts of one sort (roots or streams) by the host's
// context id: a map, in front of which a direct-mapped table keeps the
// contexts most recently registered or found. Every callback of a request
// looks its context up, and in the VM a map lookup is a runtime call that
// hashes the id and probes, where a slot costs a comparison (the eight
// lookups of a request cost about 1.9 k instructions). Envoy numbers every
// context from one counter, so the streams alive on a worker at once have
// nearby ids and fall into distinct slots; a slot another id has taken
// sends the lookup to the map, which always holds every context.
type registry[T any] struct {
	m     map[uint32]T
	slots [registrySlots]registrySlot[T]
}

const registrySlots = 64

type registrySlot[T any] struct {
	id   uint32
	used bool
	ctx  T
}

func newRegistry[T any]() registry[T] { return registry[T]{m: map[uint32]T{}} }

// get is the context registered under id.
func (r *registry[T]) get(id uint32) (T, bool) {
	s := &r.slots[id%registrySlots]
	if s.used && s.id == id {
		return s.ctx, true
	}
	ctx, ok := r.m[id]
	if ok {
		s.id, s.used, s.ctx = id, true, ctx
	}
	return ctx, ok
}

// put registers ctx under id.
func (r *registry[T]) put(id uint32, ctx T) {
	r.m[id] = ctx
	s := &r.slots[id%registrySlots]
	s.id, s.used, s.ctx = id, true, ctx
}

// remove forgets id's context.
func (r *registry[T]) remove(id uint32) {
	delete(r.m, id)
	if s := &r.slots[id%registrySlots]; s.used && s.id == id {
		*s = registrySlot[T]{}
	}
}

func (r *registry[T]) len() int { return len(r.m) }
