package core

import (
	"strconv"

	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/sharedstore/local"
)

// sharedData adapts proxy shared data to the local store: Envoy's status
// codes become the store's sentinel errors. The store decodes every value
// at once, so values are read into the host's scratch buffer when it has
// one: no allocation per bucket read.
type sharedData struct {
	h       abi.Host
	scratch abi.ScratchReader // nil when the host has none
}

// newSharedData returns a pointer: the store calls it through an interface,
// where a value receiver would cost a compiler-made wrapper call per read
// and write.
func newSharedData(h abi.Host) *sharedData {
	sr, _ := h.(abi.ScratchReader)
	return &sharedData{h: h, scratch: sr}
}

func (s *sharedData) Get(key string) ([]byte, uint32, error) {
	var v []byte
	var cas uint32
	var st abi.Status
	if s.scratch != nil {
		v, cas, st = s.scratch.GetSharedDataScratch(key)
	} else {
		v, cas, st = s.h.GetSharedData(key)
	}
	switch st {
	case abi.StatusOK:
		return v, cas, nil
	case abi.StatusNotFound:
		return nil, 0, local.ErrNotFound
	}
	return nil, 0, errs.New("get shared data: status " + strconv.Itoa(int(st)))
}

func (s *sharedData) Set(key string, value []byte, cas uint32) error {
	switch st := s.h.SetSharedData(key, value, cas); st {
	case abi.StatusOK:
		return nil
	case abi.StatusCasMismatch:
		return local.ErrCasMismatch
	default:
		return errs.New("set shared data: status " + strconv.Itoa(int(st)))
	}
}

// caller binds the remote store to proxy_http_call. The call belongs to
// the root of whatever context is running (a stream's root, or the root
// whose tick retries it); its answer is found in the VM's table by token
// whichever root of the VM receives it.
type caller struct {
	host    abi.Host
	vm      *VM
	cluster string
}

func (c *caller) Call(headers [][2]string, body []byte, timeoutMs uint32, cb func(int, []byte, error)) error {
	token, st := c.host.HTTPCall(c.cluster, headers, body, timeoutMs)
	if st != abi.StatusOK {
		return errs.New("http call to cluster " + c.cluster + ": status " + strconv.Itoa(int(st)))
	}
	c.vm.calls[token] = cb
	return nil
}

func errCallFailed(msg string) error {
	if msg == "" {
		msg = "reset"
	}
	return errs.New("http call failed: " + msg)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}
