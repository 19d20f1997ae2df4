package limit

import (
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/errs"
)

// Dimension is what a bucket is per: the whole gateway, one client, one API
// key, one user, one team or one model. The values are in admission order.
// The names are the edge form (config, wire, bucket keys, metric labels,
// refusal text); the core switches on the value.
type Dimension uint8

const (
	// DimUnknown is the zero value: no dimension a plan can hold.
	DimUnknown Dimension = iota
	DimGlobal
	DimClient
	// DimAPIKey is the caller's own bucket: the only dimension whose level
	// may be shown to the caller.
	DimAPIKey
	DimUser
	DimTeam
	DimModel
)

// Dimensions is every named dimension in admission order.
var Dimensions = [...]Dimension{DimGlobal, DimClient, DimAPIKey, DimUser, DimTeam, DimModel}

var dimensionNames = [...]string{DimGlobal: "global", DimClient: "client", DimAPIKey: "api_key", DimUser: "user", DimTeam: "team", DimModel: "model"}

// String is the dimension's name; "unknown" for a value no parser yields.
func (d Dimension) String() string {
	if d == DimUnknown || int(d) >= len(dimensionNames) {
		return "unknown"
	}
	return dimensionNames[d]
}

// Valid reports whether d is one of the named dimensions.
func (d Dimension) Valid() bool { return d != DimUnknown && int(d) < len(dimensionNames) }

// ParseDimension reads a dimension's name exactly.
func ParseDimension(name string) (Dimension, bool) {
	for d := DimGlobal; int(d) < len(dimensionNames); d++ {
		if dimensionNames[d] == name {
			return d, true
		}
	}
	return DimUnknown, false
}

// MarshalText writes the dimension's name, so encoding/json writes the
// wire's string for it.
func (d Dimension) MarshalText() ([]byte, error) {
	if !d.Valid() {
		return nil, errs.New("no name for dimension " + strconv.Itoa(int(d)))
	}
	return []byte(dimensionNames[d]), nil
}

// UnmarshalText reads a dimension's name exactly; anything else is an error.
func (d *Dimension) UnmarshalText(b []byte) error {
	v, ok := ParseDimension(string(b))
	if !ok {
		return errs.New("unknown dimension " + quote(b))
	}
	*d = v
	return nil
}
