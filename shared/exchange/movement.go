package exchange

// TokenMovement is what happened to the tokens of a hold entry, as Facts
// counts it: typed, so the counter behind Facts picks its series by index
// rather than by comparing label text on every request.
type TokenMovement uint8

const (
	TokensReserved TokenMovement = iota // held at admission
	TokensRefunded                      // held and given back at settlement
	TokensCharged                       // used beyond the hold, added at settlement
)

// NumTokenMovements bounds the movements, for tables indexed by them.
const NumTokenMovements = 3

var movementNames = [NumTokenMovements]string{"reserved", "refunded", "charged"}

// String is the movement's metric label value; "unknown" for a value no
// constant names.
func (m TokenMovement) String() string {
	if m < NumTokenMovements {
		return movementNames[m]
	}
	return "unknown"
}
