//go:build !wasip1

package admin

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/money"
)

// member is one member a request body may carry: its name, whether it must
// be there, and how its value is read.
type member struct {
	name     string
	required bool
	read     func(v jsonx.Value) error
}

// decodeObject reads body as one JSON object holding only the members
// given, each at most once. A member is never "last one wins": a repeated
// amount could hide the one the operator read.
func decodeObject(body []byte, members ...member) error {
	doc := jsonx.Parse(body)
	switch doc.Kind {
	case jsonx.Object:
	case jsonx.Invalid:
		return errors.New("body: not valid JSON (one JSON object expected)")
	default:
		return errors.New("body: must be a JSON object")
	}
	seen := make([]bool, len(members))
	var err error
	doc.Members(func(key string, v jsonx.Value) bool {
		i := indexOf(members, key)
		switch {
		case i < 0:
			err = fmt.Errorf("body: unknown member %q (it takes %s)", key, names(members))
		case seen[i]:
			err = fmt.Errorf("body: member %q is repeated", key)
		default:
			seen[i] = true
			if e := members[i].read(v); e != nil {
				err = fmt.Errorf("%s: %w", members[i].name, e)
			}
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	for i, m := range members {
		if m.required && !seen[i] {
			return fmt.Errorf("body: %s is required", m.name)
		}
	}
	return nil
}

func indexOf(members []member, name string) int {
	for i, m := range members {
		if m.name == name {
			return i
		}
	}
	return -1
}

func names(members []member) string {
	s := make([]string, len(members))
	for i, m := range members {
		s[i] = m.name
	}
	return strings.Join(s, ", ")
}

// amount reads decimal USD exactly: a string ("200.00") or a JSON number
// (200.00), as the plugin config's amounts are read.
func amount(dst *money.Amount) func(jsonx.Value) error {
	return func(v jsonx.Value) error {
		if v.Kind != jsonx.String && v.Kind != jsonx.Number {
			return errors.New("must be decimal USD text such as \"200.00\"")
		}
		a, err := money.ParseJSON(v.Raw)
		if err != nil {
			return err
		}
		*dst = a
		return nil
	}
}

// text reads a string member; empty is refused.
func text(dst *string) func(jsonx.Value) error {
	return func(v jsonx.Value) error {
		if v.Kind != jsonx.String {
			return errors.New("must be a string")
		}
		s := v.Str()
		if s == "" {
			return errors.New("must not be empty")
		}
		*dst = strings.Clone(s)
		return nil
	}
}

// limitBody is PUT …/spend-limits/…: {"limit_usd":"200.00"}.
func decodeLimit(body []byte) (limit money.Amount, err error) {
	err = decodeObject(body, member{name: "limit_usd", required: true, read: amount(&limit)})
	return limit, err
}

// decodeBalance is PUT …/balance: {"balance_usd":"100.00"}.
func decodeBalance(body []byte) (balance money.Amount, err error) {
	err = decodeObject(body, member{name: "balance_usd", required: true, read: amount(&balance)})
	return balance, err
}

// decodeTopUp is POST …/balance/top-up: {"amount_usd":"25.00","id":"…"},
// the id making a retried top-up add nothing.
func decodeTopUp(body []byte) (amt money.Amount, id string, err error) {
	err = decodeObject(body,
		member{name: "amount_usd", required: true, read: amount(&amt)},
		member{name: "id", required: true, read: text(&id)})
	if err == nil && amt == 0 {
		err = errors.New("amount_usd: must be greater than 0")
	}
	if err == nil {
		err = checkName("id", id)
	}
	return amt, id, err
}
