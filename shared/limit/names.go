package limit

import (
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/errs"
)

// enumNames is the edge form of a small enum: the name of each value by
// index, "" for the zero value (no name). Period and Dimension share it, so
// both read and write their names by one rule: exactly, no case folding
// (every writer of a name is this project).
type enumNames[T ~uint8] struct {
	what  string // "period", "dimension": for errors
	names []string
}

func (n *enumNames[T]) valid(v T) bool { return v != 0 && int(v) < len(n.names) }

func (n *enumNames[T]) name(v T) string {
	if !n.valid(v) {
		return "unknown"
	}
	return n.names[v]
}

func (n *enumNames[T]) parse(s string) (T, bool) {
	for i := 1; i < len(n.names); i++ {
		if n.names[i] == s {
			return T(i), true
		}
	}
	return 0, false
}

func (n *enumNames[T]) marshal(v T) ([]byte, error) {
	if !n.valid(v) {
		return nil, errs.New("no name for " + n.what + " " + strconv.Itoa(int(v)))
	}
	return []byte(n.names[v]), nil
}

func (n *enumNames[T]) unmarshal(p *T, b []byte) error {
	v, ok := n.parse(string(b))
	if !ok {
		return errs.New("unknown " + n.what + " " + quote(b))
	}
	*p = v
	return nil
}

// quote shows a refused name in an error, cut to 32 bytes so a long input
// does not become a long error, and Go-quoted so a control byte or broken
// UTF-8 in it is escaped rather than written into a log. (strconv, not the
// JSON writer: the vocabulary depends on nothing that parses.)
func quote(b []byte) string {
	if len(b) > 32 {
		b = b[:32]
	}
	return strconv.Quote(string(b))
}
