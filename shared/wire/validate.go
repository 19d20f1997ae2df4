package wire

import (
	"math"
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// Bounds a request must respect. They keep every number exact in a Lua
// double (2^53) and bound the work one admission may ask of the store.
const (
	MaxOps      = 32
	MaxLimits   = 4
	MaxKeyLen   = 512
	MaxQuantity = int64(1) << 50
	MaxRefill   = 1e12
)

// Validate rejects a request the store cannot admit faithfully: unknown
// kinds, missing limits, numbers a Lua double cannot hold exactly, and two
// ops on one key (their periods would share one hash and collide).
func (r AdmitRequest) Validate() error {
	if r.HoldID != "" && !ValidHoldID(r.HoldID) {
		return errs.New("hold id is not 32 lowercase hex digits")
	}
	if r.Overage != "" && r.Overage != OverageSkip && r.Overage != OverageDebt {
		return errs.New("overage is neither \"debt\" nor \"skip\"")
	}
	if _, err := r.Spend.Spend(); err != nil {
		return err
	}
	if len(r.Requests)+len(r.Tokens) > MaxOps {
		return errs.New("plan has more than " + strconv.Itoa(MaxOps) + " ops")
	}
	seen := make(map[string]struct{}, len(r.Requests)+len(r.Tokens))
	for _, group := range [2][]Op{r.Requests, r.Tokens} {
		for i, o := range group {
			if err := o.validate(); err != nil {
				return errs.Wrap("op "+strconv.Itoa(i), err)
			}
			if _, dup := seen[o.Key]; dup {
				return errs.New("op " + strconv.Itoa(i) + ": key appears twice in the plan")
			}
			seen[o.Key] = struct{}{}
		}
	}
	for _, o := range r.Requests {
		if o.Kind == limit.KindTokens {
			return errs.New("token op among request ops")
		}
	}
	for _, o := range r.Tokens {
		if o.Kind != limit.KindTokens {
			return errs.New("request op among token ops")
		}
	}
	return nil
}

func (o Op) validate() error {
	switch {
	case o.Key == "" || len(o.Key) > MaxKeyLen:
		return errs.New("key empty or longer than " + strconv.Itoa(MaxKeyLen))
	case o.Kind < limit.KindRequests || o.Kind > limit.KindTokens:
		return errs.New("unknown kind " + strconv.Itoa(int(o.Kind)))
	case !o.Dimension.Valid():
		return errs.New("no dimension")
	case len(o.Limits) == 0 || len(o.Limits) > MaxLimits:
		return errs.New("needs 1 to " + strconv.Itoa(MaxLimits) + " limits")
	case o.Amount < 0 || o.Amount > MaxQuantity:
		return errs.New("amount out of range")
	}
	for i, l := range o.Limits {
		if !l.Budget.Valid() {
			return errs.New("limit " + strconv.Itoa(i) + ": no budget period")
		}
		if l.Capacity < 0 || l.Capacity > MaxQuantity {
			return errs.New("limit " + strconv.Itoa(i) + ": capacity out of range")
		}
		if math.IsNaN(l.RefillPerSec) || l.RefillPerSec < 0 || l.RefillPerSec > MaxRefill {
			return errs.New("limit " + strconv.Itoa(i) + ": refill out of range")
		}
		for _, p := range o.Limits[:i] {
			if p.Budget == l.Budget {
				return errs.New("limit " + strconv.Itoa(i) + ": budget " + l.Budget.String() + " appears twice")
			}
		}
	}
	return nil
}

// ValidHoldID reports whether id has the form every hold id has (32
// lowercase hex digits, whether the filter or the server chose it), so an
// admission, settle or release naming anything else is refused before it
// reaches Redis.
func ValidHoldID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
