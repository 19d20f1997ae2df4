// Macros shared by the package's hand-written wasm.

// ADD(r, k) adds k to r.
#define ADD(r, k) Get r; I64Const $k; I64Add; Set r

// STRINGSTOPS(r) leaves stringStops of the eight bytes in r: the top bit of
// each quote, backslash or control byte among them, exact at the first.
#define STRINGSTOPS(r) \
	Get r; \
	I64Const $0x2222222222222222; \
	I64Xor; \
	I64Const $0x0101010101010101; \
	I64Sub; \
	Get r; \
	I64Const $0x5c5c5c5c5c5c5c5c; \
	I64Xor; \
	I64Const $0x0101010101010101; \
	I64Sub; \
	I64Or; \
	Get r; \
	I64Const $0x2020202020202020; \
	I64Sub; \
	I64Or; \
	Get r; \
	I64Const $-1; \
	I64Xor; \
	I64And; \
	I64Const $-0x7f7f7f7f7f7f7f80; \
	I64And
