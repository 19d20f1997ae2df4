package config

import "github.com/tokenbudget/tokenbudget/shared/money"

// USD is a dollar figure of the spend limits and the price list: a JSON
// number or a decimal string ("200", 200.00, "0.15", 2.5e-06), read exactly
// into nano-USD (package money) with no float on the way. A negative value,
// more than nine decimal places, or a value past 9223372036.854775807 is an
// error with its JSON path; for a limit or a price a rounding would move
// money silently.
type USD money.Amount

// UnmarshalJSON accepts the spellings documented on USD.
func (u *USD) UnmarshalJSON(b []byte) error {
	v, err := money.ParseJSON(b)
	if err != nil {
		return err
	}
	*u = USD(v)
	return nil
}

// limitOf is an optional USD as a spend limit: absent is no limit.
func limitOf(p *USD) (money.Amount, bool) {
	if p == nil {
		return 0, false
	}
	return money.Amount(*p), true
}

// priceOf is an optional USD as a per-million-token price, with its
// fallback when absent.
func priceOf(p *USD, fallback money.Price) money.Price {
	if p == nil {
		return fallback
	}
	return money.Price(*p)
}
