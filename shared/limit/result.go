package limit

// Result is what an admission decided. It is the one field a caller
// switches on: the pointers beside it (Refusal, SpendRefusal, Err) carry
// the details of the result they belong to.
type Result uint8

const (
	// ResultFailed is the zero value: the store gave no verdict (Err says
	// why). A caller that forgets to set a result therefore never admits.
	ResultFailed Result = iota
	// ResultAdmitted: every bucket and spend limit had room; Hold is set.
	ResultAdmitted
	// ResultRefused: a bucket refused; Refusal names it.
	ResultRefused
	// ResultSpendRefused: a spend limit refused before any bucket was
	// touched; SpendRefusal names it.
	ResultSpendRefused
)

var resultNames = [...]string{ResultFailed: "failed", ResultAdmitted: "admitted", ResultRefused: "refused", ResultSpendRefused: "spend_refused"}

// String names the result for logs and tests.
func (r Result) String() string {
	if int(r) >= len(resultNames) {
		return "unknown"
	}
	return resultNames[r]
}
