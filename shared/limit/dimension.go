package limit

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

var dimensionNames = enumNames[Dimension]{"dimension", []string{DimGlobal: "global", DimClient: "client", DimAPIKey: "api_key", DimUser: "user", DimTeam: "team", DimModel: "model"}}

// String is the dimension's name; "unknown" for a value no parser yields.
func (d Dimension) String() string { return dimensionNames.name(d) }

// Valid reports whether d is one of the named dimensions.
func (d Dimension) Valid() bool { return dimensionNames.valid(d) }

// ParseDimension reads a dimension's name exactly.
func ParseDimension(name string) (Dimension, bool) { return dimensionNames.parse(name) }

// MarshalText writes the dimension's name, so encoding/json writes the
// wire's string for it.
func (d Dimension) MarshalText() ([]byte, error) { return dimensionNames.marshal(d) }

// UnmarshalText reads a dimension's name exactly; anything else is an error.
func (d *Dimension) UnmarshalText(b []byte) error { return dimensionNames.unmarshal(d, b) }
