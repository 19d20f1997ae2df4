// Package money is the one integer unit every USD figure of the spend limits
// is kept in, and its exact decimal text form.
//
// The unit is the nano-dollar: 1 USD = 1,000,000,000 (1e9) units.
//
//   - An Amount (a limit, a request's cost, a period's usage) is nano-USD in
//     an int64, so the largest figure is 9,223,372,036.854775807 USD, far
//     beyond any limit, and one unit is far below any price of one request.
//   - A Price is USD per million tokens in the same nano-USD unit:
//     $0.0375 per million tokens is 37,500,000, and the finest price is
//     $0.000000001 per million tokens ($1e-15 per token), finer than any
//     published per-token rate. A request's cost in nano-USD is
//     tokens × price / 1,000,000; package pricing does that with 128-bit
//     products so nothing overflows, and rounds up once per request.
//
// Parsing is exact: decimal text ("200", "200.00", "0.15", "1e-6",
// "2.5e-06", a JSON number or a JSON string holding one) is read digit by
// digit into the integer, never through a float. Anything the unit cannot
// hold exactly is an error, not a rounding: a negative value, more than nine
// decimal places of USD ("0.0000000001"), a value past the int64 range,
// NaN, Inf, hex or empty text. For a limit or a price, a silent rounding
// would move money; an error makes the operator write what they mean.
//
// Formatting writes the exact decimal USD with at least two and at most
// nine decimal places ("5.00", "4.98", "0.000000375"), which Parse reads
// back to the same integer.
//
// Compiled into the .wasm: strconv and math/bits only, no fmt, no time.
package money
