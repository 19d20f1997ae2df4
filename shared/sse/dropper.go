// Package sse edits a server-sent-event stream as it passes, split at any
// byte boundary. The filter uses it to take back what its own request
// rewrite caused: when it added stream_options.include_usage for a client
// that did not ask, the backend's extra usage-only chunk is read for
// settlement and then dropped, so the client sees the stream it asked for.
//
// Compiled into the .wasm: no fmt, no os, no goroutines.
package sse

// maxPending bounds the bytes held back while an event is incomplete; an
// event longer than this is passed through undecided (never dropped), so a
// hostile stream cannot make the filter buffer without limit.
const maxPending = 1 << 20

// Dropper forwards whole events and drops those Drop selects. Bytes of an
// event are held back only until the event's blank line arrives; every
// other byte is forwarded unchanged and in order.
type Dropper struct {
	// Drop is given the concatenated data: payloads of one event (without
	// the "data:" prefixes) and says whether to remove the whole event.
	Drop func(data []byte) bool

	pending  []byte
	passthru bool // the current event outgrew maxPending: forward it as is
	midLine  bool // passthru stopped inside a line
	scratch  []byte
}

// Write takes the next chunk and returns the bytes to forward now. At the
// end of the stream (eos) whatever is held back is forwarded.
func (d *Dropper) Write(chunk []byte, eos bool) []byte {
	buf := chunk
	if len(d.pending) > 0 {
		buf = append(d.pending, chunk...)
		d.pending = nil
	}
	// out stays nil while every event so far is kept and starts at buf[0]:
	// the common chunk (whole events, none dropped) is returned as is.
	var out []byte
	copying := len(buf) != len(chunk)
	start := 0
	for start < len(buf) {
		end, ok := eventEnd(buf, start, d.passthru && d.midLine)
		if !ok {
			break
		}
		if d.passthru {
			d.passthru, d.midLine = false, false
		} else if d.Drop != nil && d.Drop(d.data(buf[start:end])) {
			if !copying {
				out, copying = append(make([]byte, 0, len(buf)), buf[:start]...), true
			}
			start = end
			continue
		}
		if copying {
			out = append(out, buf[start:end]...)
		}
		start = end
	}
	rest := buf[start:]
	if !copying {
		if len(rest) == 0 || eos {
			return chunk
		}
		out = append(make([]byte, 0, len(buf)), buf[:start]...)
	}
	switch {
	case eos:
		out = append(out, rest...)
	case d.passthru || len(rest) > maxPending:
		if len(rest) > 0 {
			last := rest[len(rest)-1]
			d.midLine = last != '\n' && last != '\r'
		}
		d.passthru = true
		out = append(out, rest...)
	default:
		d.pending = append([]byte(nil), rest...)
	}
	return out
}

// eventEnd finds the end (exclusive, after the blank line) of the event
// starting at i. Lines end in LF, CRLF or CR; an event ends at an empty
// line. midLine says i is inside a line already begun, so the first line
// end closes that line rather than the event.
func eventEnd(b []byte, i int, midLine bool) (int, bool) {
	lineStart := i
	if midLine {
		lineStart = -1
	}
	for i < len(b) {
		c := b[i]
		if c != '\n' && c != '\r' {
			i++
			continue
		}
		next := i + 1
		if c == '\r' {
			if next >= len(b) {
				return 0, false // a CR at the end may be half of CRLF
			}
			if b[next] == '\n' {
				next++
			}
		}
		if i == lineStart {
			return next, true
		}
		lineStart, i = next, next
	}
	return 0, false
}

// data joins the payloads of the event's data lines with newlines, per the
// SSE spec, into a reused scratch buffer.
func (d *Dropper) data(ev []byte) []byte {
	d.scratch = d.scratch[:0]
	first := true
	for len(ev) > 0 {
		n := 0
		for n < len(ev) && ev[n] != '\n' && ev[n] != '\r' {
			n++
		}
		line := ev[:n]
		if n < len(ev) && ev[n] == '\r' && n+1 < len(ev) && ev[n+1] == '\n' {
			n++
		}
		if n < len(ev) {
			n++
		}
		ev = ev[n:]
		if len(line) < 5 || string(line[:5]) != "data:" {
			continue
		}
		line = line[5:]
		if len(line) > 0 && line[0] == ' ' {
			line = line[1:]
		}
		if !first {
			d.scratch = append(d.scratch, '\n')
		}
		first = false
		d.scratch = append(d.scratch, line...)
	}
	return d.scratch
}
