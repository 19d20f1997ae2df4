// Macros shared by the package's hand-written wasm (ascii_wasm.s,
// words_wasm.s): the eight-bytes-at-a-time letter tests of words.go and the
// steps of a word's charge both routines take.

// ADD(r, k) adds k to r.
#define ADD(r, k) Get r; I64Const $k; I64Add; Set r

// NOTLOWER takes eight bytes x and leaves the top bit of the first that is
// not 'a'..'z' (estimate.notLower, exact at that byte only); R11 is scratch.
#define NOTLOWER \
	Tee R11; \
	I64Const $0x6161616161616161; \
	I64Sub; \
	Get R11; \
	I64Const $0x0505050505050505; \
	I64Add; \
	I64Or; \
	Get R11; \
	I64Or; \
	I64Const $-0x7f7f7f7f7f7f7f80; \
	I64And

// VOWELBYTES takes eight bytes x and leaves the top bit of each that is a
// vowel in either case (estimate.vowelBytes); R12 is scratch.
#define VOWELBYTES \
	I64Const $0x2020202020202020; \
	I64Or; \
	Tee R12; \
	I64Const $0x6161616161616161; \
	I64Xor; \
	I64Const $0x7f7f7f7f7f7f7f7f; \
	I64Add; \
	Get R12; \
	I64Const $0x6565656565656565; \
	I64Xor; \
	I64Const $0x7f7f7f7f7f7f7f7f; \
	I64Add; \
	I64And; \
	Get R12; \
	I64Const $0x6969696969696969; \
	I64Xor; \
	I64Const $0x7f7f7f7f7f7f7f7f; \
	I64Add; \
	I64And; \
	Get R12; \
	I64Const $0x6f6f6f6f6f6f6f6f; \
	I64Xor; \
	I64Const $0x7f7f7f7f7f7f7f7f; \
	I64Add; \
	I64And; \
	Get R12; \
	I64Const $0x7575757575757575; \
	I64Xor; \
	I64Const $0x7f7f7f7f7f7f7f7f; \
	I64Add; \
	I64And; \
	Get R12; \
	I64Const $0x7979797979797979; \
	I64Xor; \
	I64Const $0x7f7f7f7f7f7f7f7f; \
	I64Add; \
	I64And; \
	I64Const $-1; \
	I64Xor; \
	I64Const $-0x7f7f7f7f7f7f7f80; \
	I64And

// UPTO(r) keeps, of eight bytes loaded at a word's ninth letter, those of its
// letters 9 to l, l in r (9..16): the low 8*(l-8) bits.
#define UPTO(r) \
	I64Const $-1; \
	I64Const $128; \
	Get r; \
	I64Const $3; \
	I64Shl; \
	I64Sub; \
	I64ShrU; \
	I64And

// BLOBEXTRA(r) adds to the charge in R3 what a word of r letters with
// hardly any vowels costs beyond its first token: 40 a letter after the
// first.
#define BLOBEXTRA(r) Get R3; Get r; I64Const $1; I64Sub; I64Const $40; I64Mul; I64Add; Set R3
