#include "textflag.h"
#include "letters_wasm.h"

// LOAD(r, k) pushes the eight bytes at s[r+k:].
#define LOAD(r, k) Get R0; Get r; I64Add; I32WrapI64; I64Load $k
// LETTER leaves 1 when the byte on the stack (0..255) is a letter, and
// NOTLETTER 1 when it is not.
#define LETTER I64Const $0x20; I64Or; I64Const $97; I64Sub; I64Const $26; I64LtU
#define NOTLETTER I64Const $0x20; I64Or; I64Const $97; I64Sub; I64Const $26; I64GeU
// WORDEND sets j (R6) to the end of the word of R5 letters at i, and R7 to
// the eight bytes there.
#define WORDEND Get R2; Get R5; I64Add; Set R6; LOAD(R6, 0); Set R7
// DIGIT leaves 1 when the byte on the stack (0..255) is a digit.
#define DIGIT I64Const $48; I64Sub; I64Const $10; I64LtU
// LETTERS(k) pushes k plus the lower-case letters from s[i+k], up to
// eight: the length of a word at i whose first k letters are known.
#define LETTERS(k) LOAD(R2, k); NOTLOWER; I64Ctz; I64Const $3; I64ShrU; I64Const $k; I64Add
// NOROOM leaves 1 when fewer than 25 bytes are left from i.
#define NOROOM Get R2; I64Const $25; I64Add; Get R1; I64GtS
// LOWBYTE(r) pushes the low byte of r.
#define LOWBYTE(r) Get r; I64Const $0xff; I64And
// SHORTWORD charges a word of R5 letters, fewer than eight:
// u += 64 + max(l-5, 0)*16; R11 is scratch.
#define SHORTWORD \
	Get R3; \
	I64Const $64; \
	I64Add; \
	Get R5; \
	I64Const $5; \
	I64Sub; \
	Tee R11; \
	I64Const $0; \
	Get R11; \
	I64Const $0; \
	I64GtS; \
	Select; \
	I64Const $4; \
	I64Shl; \
	I64Add; \
	Set R3

// func wordsFast(s []byte, i int, u int64) (next int, charged int64, done bool)
//
// The turns of words' fast loop (words.go), the same charges in the same
// order. A turn starts at a letter with 25 bytes of room and takes the word
// there, [A-Za-z][a-z]* of l letters, up to 16:
//   - l < 8: 64 + (l-5)*16 beyond 5 letters; a capital or a digit after it
//     leaves the word to words' own loop (done false, next = i);
//   - l >= 8: with fewer than one vowel (y included) in six, 64 + (l-1)*40,
//     else 64 + (l-5)*16; a letter or a digit after it, or l > 16, leaves it
//     the same way.
// Then what follows: a space before a letter is free, and the next word is
// taken on the same turn when it is shorter than eight letters and followed
// by a space and a letter too; one punctuation byte of wordPunct before a
// letter, or before a space and a letter, costs 64. Anything else after the
// word ends the run there (done true, next = the word's end).
//
// Registers: R0 s's address, R1 len(s), R2 i, R3 u, R4 &wordPunct, R5 l,
// R6 j (the word's end), R7 the eight bytes at j, R8 the byte after j,
// R9 vowels or the punctuation flag, R11 and R12 scratch.
TEXT ·wordsFast(SB), NOSPLIT, $0-57
	MOVD s_base+0(FP), R0
	MOVD s_len+8(FP), R1
	MOVD i+24(FP), R2
	MOVD u+32(FP), R3
	MOVD $·wordPunct(SB), R4

	Block // leave: words goes on at R2
	Block // done: the run ends at R6
	Loop // turn
		NOROOM
		BrIf $2 // leave

		// l = 1 + the lower-case letters after s[i], up to eight.
		LETTERS(1)
		Set R5

		Get R5
		I64Const $8
		I64GeS
		If // a long word
			Get R5
			I64Const $8
			I64GtS
			If
				LETTERS(9)
				Set R5
			End
			WORDEND
			// Over 16 letters, or a letter or a digit after it: words'.
			// (Each test is a branch of its own: a test of tests combined
			// costs the VM more than the branches.)
			Get R5
			I64Const $16
			I64GtS
			BrIf $3 // leave
			LOWBYTE(R7)
			Tee R11
			LETTER
			BrIf $3 // leave
			Get R11
			DIGIT
			BrIf $3 // leave

			// Vowels among its first eight letters, then letters 9 to l.
			LOAD(R2, 0)
			VOWELBYTES
			I64Popcnt
			Set R9
			Get R5
			I64Const $8
			I64GtS
			If
				Get R9
				LOAD(R2, 8)
				VOWELBYTES
				UPTO(R5)
				I64Popcnt
				I64Add
				Set R9
			End
			Get R9
			I64Const $6
			I64Mul
			Get R5
			I64LtS
			If
				BLOBEXTRA(R5) // hardly any vowels
			Else
				Get R3
				Get R5
				I64Const $5
				I64Sub
				I64Const $4
				I64Shl
				I64Add
				Set R3
			End
			ADD(R3, 64)
		Else // a short word
			WORDEND
			// A capital or a digit after it: words'.
			LOWBYTE(R7)
			Tee R11
			I64Const $65
			I64Sub
			I64Const $26
			I64LtU
			BrIf $3 // leave
			Get R11
			DIGIT
			BrIf $3 // leave
			SHORTWORD
		End

		Get R7
		I64Const $8
		I64ShrU
		I64Const $0xff
		I64And
		Set R8

		// A space before a letter: free, and the next short word too.
		Block // not a space before a letter
			LOWBYTE(R7)
			I64Const $32
			I64Ne
			BrIf $0
			Get R8
			NOTLETTER
			BrIf $0
			Get R6
			I64Const $1
			I64Add
			Set R2
			NOROOM
			BrIf $1 // next turn
			LETTERS(1)
			Set R5
			Get R2
			Get R5
			I64Add
			Set R6
			Block // not a short word before a space and a letter
				Get R5
				I64Const $8
				I64GeS
				BrIf $0
				LOAD(R6, 0)
				Tee R7
				I64Const $0xff
				I64And
				I64Const $32
				I64Ne
				BrIf $0
				Get R7
				I64Const $8
				I64ShrU
				I64Const $0xff
				I64And
				NOTLETTER
				BrIf $0
				SHORTWORD
				Get R6
				I64Const $1
				I64Add
				Set R2
			End
			Br $1 // next turn
		End

		// One punctuation byte before a letter, or before a space and a
		// letter: 64, and the turn goes on at that letter (R2; done
		// answers R6 and leaves R2 unread).
		Get R4
		LOWBYTE(R7)
		I64Add
		I32WrapI64
		I64Load8U $0
		I64Eqz
		BrIf $1 // done
		Get R6
		I64Const $1
		I64Add
		Set R2
		Block // a letter at R2
			Get R8
			LETTER
			BrIf $0
			Get R8
			I64Const $32
			I64Ne
			BrIf $2 // done
			Get R7
			I64Const $16
			I64ShrU
			I64Const $0xff
			I64And
			NOTLETTER
			BrIf $2 // done
			ADD(R2, 1)
		End
		ADD(R3, 64)
		Br $0 // next turn
	End
	End
	// Done: the run ends at the word's end.
	MOVD R6, next+40(FP)
	MOVD R3, charged+48(FP)
	Get SP
	I64Const $1
	I64Store8 done+56(FP)
	RET
	End
	// Leave: words' own loop goes on at R2.
	MOVD R2, next+40(FP)
	MOVD R3, charged+48(FP)
	Get SP
	I64Const $0
	I64Store8 done+56(FP)
	RET
