#include "textflag.h"

// BYTEAT(r, k) pushes s[r+k]; CLASSOF(r) pushes the class of the byte in r,
// t.class[r], and CLASSAT(r) that of s[r] (ADD is in letters_wasm.h).
#define BYTEAT(r, k) Get R0; Get r; I64Add; I32WrapI64; I64Load8U $k
#define CLASSOF(r) Get R4; Get r; I64Add; I32WrapI64; I64Load8U $0
#define CLASSAT(r) Get R4; BYTEAT(r, 0); I64Add; I32WrapI64; I64Load8U $0

// WORDEXTRA charges a word's letters beyond five: u += (l-5)*16.
#define WORDEXTRA Get R3; Get R9; I64Const $5; I64Sub; I64Const $4; I64Shl; I64Add; Set R3

#include "letters_wasm.h"

// func asciiRun(s []byte, i int, u int64, t *asciiTables) (next int, charged int64)
//
// The charges are scan's (text.go, words.go, runs.go), in 1/64 tokens:
//   word  [A-Za-z][a-z]* not followed by a letter or digit, l letters:
//         64, plus (l-5)*16 beyond 5 letters; from 8 letters with fewer
//         than one vowel (y included) in six, 64 + (l-1)*40 instead
//   space one whitespace byte before a non-space: free, or 64 for a
//         newline or carriage return; a run of two or more: 64, 64 per
//         change of byte, 2 per byte beyond 16
//   digit a run of digits: 64 per three begun, 64 more after whitespace
//   punct one: 64; two: 64, plus 8 for a repeat, plus 64 unless a common
//         pair (pairBits)
//
// Registers: R0 s's address, R1 len(s), R2 i, R3 u, R4 t, R5 s[i],
// R6 its class, R7 j (the piece's end), R8 the bytes after it, R9 a count
// (letters, changes, repeat), R10 vowels, R11 and R12 scratch.
// Classes: 0 lower, 1 upper, 2 digit, 3 space, 4 punct, 5 high.
TEXT ·asciiRun(SB), NOSPLIT, $0-64
	MOVD s_base+0(FP), R0
	MOVD s_len+8(FP), R1
	MOVD i+24(FP), R2
	MOVD u+32(FP), R3
	MOVD t+40(FP), R4

	Block // stop
	Loop // piece
		// Stop fewer than three bytes before the end.
		Get R2
		I64Const $3
		I64Add
		Get R1
		I64GtS
		BrIf $1

		BYTEAT(R2, 0)
		Set R5
		CLASSOF(R5)
		Set R6

		// A word.
		Get R6
		I64Const $1
		I64LeU
		If
		Loop // word
			Get R2
			I64Const $1
			I64Add
			Set R7
			Block // letters counted
			Block // fewer than 8 bytes left
			Loop // eight lower-case letters at a time
				Get R7
				I64Const $8
				I64Add
				Get R1
				I64GtS
				BrIf $1
				Get R0
				Get R7
				I64Add
				I32WrapI64
				I64Load $0
				NOTLOWER
				Tee R11
				I64Eqz
				If
					ADD(R7, 8)
					Br $1
				End
				Get R7
				Get R11
				I64Ctz
				I64Const $3
				I64ShrU
				I64Add
				Set R7
				Br $2
			End
			End
			Loop // one at a time
				Get R7
				Get R1
				I64GeS
				BrIf $1
				CLASSAT(R7)
				I64Eqz
				I32Eqz
				BrIf $1
				ADD(R7, 1)
				Br $0
			End
			End

			// A capital or a digit after it: a word of several pieces, scan's.
			// R8 holds the two bytes after the word, or 0 with fewer left.
			I64Const $0
			Set R8
			Get R7
			I64Const $2
			I64Add
			Get R1
			I64LeS
			If
				Get R0
				Get R7
				I64Add
				I32WrapI64
				I64Load16U $0
				Tee R8
				I64Const $0xff
				I64And
				Tee R11
				I64Const $65 // A
				I64Sub
				I64Const $26
				I64LtU
				Get R11
				I64Const $48 // 0
				I64Sub
				I64Const $10
				I64LtU
				I32Or
				BrIf $4 // stop
			Else
				Get R7
				Get R1
				I64LtS
				If
					CLASSAT(R7)
					I64Const $2
					I64LeU
					BrIf $5 // stop
				End
			End

			Get R7
			Get R2
			I64Sub
			Set R9 // letters

			Get R9
			I64Const $8
			I64GeS
			If
				// Count the vowels, eight letters at a time up to 16.
				Get R9
				I64Const $16
				I64LeS
				Get R2
				I64Const $16
				I64Add
				Get R1
				I64LeS
				I32And
				If
					Get R0
					Get R2
					I64Add
					I32WrapI64
					I64Load $0
					VOWELBYTES
					I64Popcnt
					Set R10
					Get R9
					I64Const $8
					I64GtS
					If
						Get R10
						Get R0
						Get R2
						I64Add
						I32WrapI64
						I64Load $8
						VOWELBYTES
						UPTO(R9)
						I64Popcnt
						I64Add
						Set R10
					End
				Else
					I64Const $0
					Set R10
					Get R2
					Set R11
					Block
					Loop
						Get R11
						Get R7
						I64GeS
						BrIf $1
						BYTEAT(R11, 0)
						I64Const $32
						I64Or
						Set R8
						Get R10
						Get R8
						I64Const $97 // a
						I64Eq
						Get R8
						I64Const $101 // e
						I64Eq
						I32Or
						Get R8
						I64Const $105 // i
						I64Eq
						I32Or
						Get R8
						I64Const $111 // o
						I64Eq
						I32Or
						Get R8
						I64Const $117 // u
						I64Eq
						I32Or
						Get R8
						I64Const $121 // y
						I64Eq
						I32Or
						I64ExtendI32U
						I64Add
						Set R10
						ADD(R11, 1)
						Br $0
					End
					End
				End
				Get R10
				I64Const $6
				I64Mul
				Get R9
				I64LtS
				If
					BLOBEXTRA(R9) // hardly any vowels
				Else
					WORDEXTRA
				End
			Else
				Get R9
				I64Const $5
				I64GtS
				If
					WORDEXTRA
				End
			End
			ADD(R3, 64)
			Get R7
			Set R2
			// A single space then a letter, prose's common case: the
			// space is free and the letter starts the next word, without
			// a turn of the piece loop.
			Get R8
			I64Const $0xff
			I64And
			I64Const $32
			I64Eq
			Get R8
			I64Const $8
			I64ShrU
			I64Const $32
			I64Or
			I64Const $97
			I64Sub
			I64Const $26
			I64LtU
			I32And
			If
				Get R7
				I64Const $1
				I64Add
				Set R2
				Br $1 // word
			End
			Br $2 // next piece
		End
		End

		// Whitespace.
		Get R6
		I64Const $3
		I64Eq
		If
			BYTEAT(R2, 1)
			Set R8
			CLASSOF(R8)
			I64Const $3
			I64Ne
			If
				// One byte before a non-space.
				Get R5
				I64Const $10
				I64Eq
				Get R5
				I64Const $13
				I64Eq
				I32Or
				If
					ADD(R3, 64)
					ADD(R2, 1)
					Br $3 // next piece
				End
				// A space before CJK or Hangul: scan's.
				Get R8
				I64Const $224
				I64GeU
				BrIf $3 // stop
				ADD(R2, 1)
				Br $2 // next piece
			End
			// A run of two or more.
			Get R2
			I64Const $2
			I64Add
			Set R7
			Get R8
			Get R5
			I64Ne
			I64ExtendI32U
			Set R9 // changes
			Block
			Loop
				Get R7
				Get R1
				I64GeS
				BrIf $1
				BYTEAT(R7, 0)
				Set R8
				CLASSOF(R8)
				I64Const $3
				I64Ne
				BrIf $1
				Get R9
				Get R8
				Get R0
				Get R7
				I64Add
				I64Const $1
				I64Sub
				I32WrapI64
				I64Load8U $0
				I64Ne
				I64ExtendI32U
				I64Add
				Set R9
				ADD(R7, 1)
				Br $0
			End
			End
			Get R3
			I64Const $64
			I64Add
			Get R9
			I64Const $6
			I64Shl
			I64Add
			Set R3
			Get R7
			Get R2
			I64Sub
			I64Const $16
			I64Sub
			Tee R11
			I64Const $0
			I64GtS
			If
				Get R3
				Get R11
				I64Const $1
				I64Shl
				I64Add
				Set R3
			End
			Get R7
			Set R2
			Br $1 // next piece
		End

		// Digits.
		Get R6
		I64Const $2
		I64Eq
		If
			Get R2
			Set R7
			Block
			Loop
				Get R7
				Get R1
				I64GeS
				BrIf $1
				CLASSAT(R7)
				I64Const $2
				I64Ne
				BrIf $1
				ADD(R7, 1)
				Br $0
			End
			End
			Get R3
			Get R7
			Get R2
			I64Sub
			I64Const $2
			I64Add
			I64Const $3
			I64DivU
			I64Const $6
			I64Shl
			I64Add
			Set R3
			// After whitespace, the space is a token of its own.
			Get R2
			I64Const $0
			I64GtS
			If
				Get R4
				Get R0
				Get R2
				I64Add
				I64Const $1
				I64Sub
				I32WrapI64
				I64Load8U $0
				I64Add
				I32WrapI64
				I64Load8U $0
				I64Const $3
				I64Eq
				If
					ADD(R3, 64)
				End
			End
			Get R7
			Set R2
			Br $1 // next piece
		End

		// Punctuation.
		Get R6
		I64Const $4
		I64Eq
		If
			BYTEAT(R2, 1)
			Set R8
			CLASSOF(R8)
			I64Const $4
			I64Ne
			If
				// One alone.
				ADD(R3, 64)
				ADD(R2, 1)
				Br $2 // next piece
			End
			// Three or more: scan's.
			Get R4
			BYTEAT(R2, 2)
			I64Add
			I32WrapI64
			I64Load8U $0
			I64Const $4
			I64Eq
			BrIf $2 // stop
			// Two: a repeat, a common pair or two tokens.
			Get R5
			Get R8
			I64Eq
			I64ExtendI32U
			Set R9
			Get R4
			Get R5
			I64Const $2
			I64Shl
			I64Add
			I32WrapI64
			I64Load32U $512
			Get R4
			Get R8
			I64Add
			I32WrapI64
			I64Load8U $256
			I64ShrU
			I64Const $1
			I64And
			Set R11 // pair
			Get R3
			I64Const $64
			I64Add
			Get R9
			I64Const $3
			I64Shl
			I64Add
			I64Const $1
			Get R9
			I64Sub
			I64Const $1
			Get R11
			I64Sub
			I64Mul
			I64Const $6
			I64Shl
			I64Add
			Set R3
			ADD(R2, 2)
			Br $1 // next piece
		End

		// A byte from 0x80 up: scan's.
	End
	End

	MOVD R2, next+48(FP)
	MOVD R3, charged+56(FP)
	RET
