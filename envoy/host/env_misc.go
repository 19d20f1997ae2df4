package host

import (
	"strings"
	"time"
)

func timeSince(t time.Time) time.Duration { return time.Since(t) }

func hostLog(v *vm, s []uint64) {
	level, ptr, size := uint32(s[0]), uint32(s[1]), uint32(s[2])
	if level > uint32(LevelCritical)+1 {
		s[0] = uint64(statusBadArgument)
		return
	}
	msg, ok := v.readString(ptr, size)
	if !ok {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	v.h.addLog(v.worker, Level(level), msg)
	s[0] = uint64(statusOK)
}

func hostGetLogLevel(v *vm, s []uint64) {
	if !v.putU32(uint32(s[0]), uint32(v.h.opts.LogLevel)) {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	s[0] = uint64(statusOK)
}

func hostGetStatus(v *vm, s []uint64) {
	codePtr, msgPtr, msgSize := uint32(s[0]), uint32(s[1]), uint32(s[2])
	if !v.putU32(codePtr, v.statusCode) {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	s[0] = uint64(v.copyOut([]byte(v.statusMsg), msgPtr, msgSize))
}

func hostGetCurrentTime(v *vm, s []uint64) {
	if !v.putU64(uint32(s[0]), uint64(v.h.now().UnixNano())) {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	s[0] = uint64(statusOK)
}

func hostSetTickPeriod(v *vm, s []uint64) {
	c := v.effective
	if c == nil {
		s[0] = uint64(statusBadArgument)
		return
	}
	root := c.rootCtx()
	root.tickPeriod = time.Duration(uint32(s[0])) * time.Millisecond
	root.nextTick = time.Now().Add(root.tickPeriod)
	s[0] = uint64(statusOK)
}

func hostSetEffectiveContext(v *vm, s []uint64) {
	c, ok := v.contexts[uint32(s[0])]
	if !ok || c.deleted {
		s[0] = uint64(statusBadArgument)
		return
	}
	v.effective = c
	s[0] = uint64(statusOK)
}

func hostDone(v *vm, s []uint64) {
	// Envoy answers NotFound unless the root is waiting in pending_done; ours never waits
	// (finishRoot deletes right after on_done).
	s[0] = uint64(statusNotFound)
}

func hostCallForeign(v *vm, s []uint64) {
	// Envoy registers a few foreign functions (compression, declare_property, ...); none here.
	s[0] = uint64(statusNotFound)
}

func hostContinueStream(v *vm, s []uint64) {
	st := v.effectiveStream()
	typ := uint32(s[0])
	switch typ {
	case 0, 1:
	case 2, 3:
		s[0] = uint64(statusUnimplemented)
		return
	default:
		s[0] = uint64(statusBadArgument)
		return
	}
	if st != nil {
		d := st.dirOf(int(typ))
		// Envoy drops its header/body pointers at once: the maps become inaccessible now, the
		// stream continues after the VM call.
		d.headersOpen = false
		v.actions = append(v.actions, func() { st.resume(int(typ)) })
	}
	s[0] = uint64(statusOK)
}

func hostCloseStream(v *vm, s []uint64) {
	st := v.effectiveStream()
	typ := uint32(s[0])
	if typ > 3 {
		s[0] = uint64(statusBadArgument)
		return
	}
	if st != nil && typ <= 1 {
		if st.respDetails == "" {
			st.respDetails = "wasm_close_stream"
		}
		v.actions = append(v.actions, func() { st.closeStream() })
	}
	s[0] = uint64(statusOK)
}

func (v *vm) effectiveStream() *Stream {
	if v.effective == nil || v.effective.stream == nil {
		return nil
	}
	st := v.effective.stream
	if st.done {
		return nil
	}
	return st
}

func hostSendLocalResponse(v *vm, s []uint64) {
	status := uint32(s[0])
	details, ok1 := v.readString(uint32(s[1]), uint32(s[2]))
	body, ok2 := v.read(uint32(s[3]), uint32(s[4]))
	hb, ok3 := v.read(uint32(s[5]), uint32(s[6]))
	if !ok1 || !ok2 || !ok3 {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	// cpp-host: malformed pairs are an empty list, the answer is Ok, and the callback that is
	// running now ends in Stop whatever it returns (stopNextIteration), so the headers or body
	// it would have let go stay with the reply.
	hdrs := decodePairs(hb)
	v.stopNext = true
	st := v.effectiveStream()
	if st != nil {
		body = append([]byte(nil), body...)
		// Envoy replaces each whitespace character of the details with an underscore
		// (StringUtil::replaceAllEmptySpace).
		details = replaceEmptySpace(details)
		grpc := int(int32(uint32(s[7])))
		v.actions = append(v.actions, func() { st.localReply(int(status), body, hdrs, details, grpc, false) })
	}
	s[0] = uint64(statusOK)
}

func replaceEmptySpace(s string) string {
	if !strings.ContainsAny(s, " \t\n\v\f\r") {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		switch c {
		case ' ', '\t', '\n', '\v', '\f', '\r':
			b[i] = '_'
		}
	}
	return string(b)
}
