//go:build !wasip1

package admin

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxName bounds a team, key, user or top-up id.
const maxName = 256

// checkName refuses an identifier the ledger and the cache could not keep
// apart from another: empty, over maxName bytes, not UTF-8, or holding
// control characters.
func checkName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s: must not be empty", what)
	case len(s) > maxName:
		return fmt.Errorf("%s: longer than %d bytes", what, maxName)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s: not valid UTF-8", what)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return fmt.Errorf("%s: holds a control character", what)
	}
	return nil
}

// checkTeam is checkName for a team, which also may not hold a brace: the
// team is the hash tag {<team>} of its cache keys, and a brace inside it
// would end the tag early.
func checkTeam(team string) error {
	if err := checkName("team", team); err != nil {
		return err
	}
	if strings.ContainsAny(team, "{}") {
		return fmt.Errorf("team: must not hold { or } (it is the hash tag of the team's cache keys)")
	}
	return nil
}
