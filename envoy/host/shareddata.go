package host

import "sync"

// sharedData is cpp-host's per-vm_id key/value map shared by every worker VM of that vm_id.
type sharedData struct {
	refs int
	m    map[string]sharedEntry
}

type sharedEntry struct {
	value []byte
	cas   uint32
}

var (
	sharedMu  sync.Mutex
	sharedAll        = map[string]*sharedData{}
	casNext   uint32 = 1 // one process-wide counter, as in cpp-host's SharedData
)

// nextCas returns the next CAS value, skipping 0 (0 means "unconditional"). Callers hold sharedMu.
func nextCas() uint32 {
	c := casNext
	casNext++
	if casNext == 0 {
		casNext = 1
	}
	return c
}

func acquireShared(vmID string) *sharedData {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	d, ok := sharedAll[vmID]
	if !ok {
		d = &sharedData{m: map[string]sharedEntry{}}
		sharedAll[vmID] = d
	}
	d.refs++
	return d
}

// releaseShared drops the map with the last Host of that vm_id, as Envoy drops it with the last VM.
func releaseShared(vmID string) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if d, ok := sharedAll[vmID]; ok {
		d.refs--
		if d.refs <= 0 {
			delete(sharedAll, vmID)
		}
	}
}

func (d *sharedData) get(key string) ([]byte, uint32, bool) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	e, ok := d.m[key]
	return e.value, e.cas, ok
}

func (d *sharedData) set(key string, value []byte, cas uint32) uint32 {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if e, ok := d.m[key]; ok && cas != 0 && cas != e.cas {
		return statusCasMismatch
	}
	d.m[key] = sharedEntry{value: append([]byte(nil), value...), cas: nextCas()}
	return statusOK
}

// SharedData reads the vm_id's shared map like proxy_get_shared_data: value, CAS, found.
func (h *Host) SharedData(key string) ([]byte, uint32, bool) {
	v, c, ok := h.shared.get(key)
	return append([]byte(nil), v...), c, ok
}

func hostGetSharedData(v *vm, s []uint64) {
	key, ok := v.readString(uint32(s[0]), uint32(s[1]))
	if !ok {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	val, cas, found := v.h.shared.get(key)
	if !found {
		s[0] = uint64(statusNotFound)
		return
	}
	if st := v.copyOut(val, uint32(s[2]), uint32(s[3])); st != statusOK {
		s[0] = uint64(st)
		return
	}
	if !v.putU32(uint32(s[4]), cas) {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	s[0] = uint64(statusOK)
}

func hostSetSharedData(v *vm, s []uint64) {
	key, ok1 := v.readString(uint32(s[0]), uint32(s[1]))
	val, ok2 := v.read(uint32(s[2]), uint32(s[3]))
	if !ok1 || !ok2 {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	s[0] = uint64(v.h.shared.set(key, val, uint32(s[4])))
}
