#include "textflag.h"
#include "stops_wasm.h"

// DADDR pushes the address of d[n].
#define DADDR Get R3; Get R5; I64Add; I32WrapI64
// CONT makes the low six bits of the value on the stack a UTF-8
// continuation byte.
#define CONT I64Const $0x3f; I64And; I64Const $0x80; I64Or

// func unescapeRun(c []byte, i int, d []byte, n int) (ci, dn int)
//
// Registers: R0 c's address, R1 len(c), R2 i, R3 d's address, R4 len(d),
// R5 n, R6 eight bytes or the byte at i, R7 the mask of stops, R8
// &shortEscapes, R9 the rune of a \u escape, R10 what a one-letter escape
// stands for, R11 the index of a hex digit, R12 that digit's byte, R13 its
// value.
TEXT ·unescapeRun(SB), NOSPLIT, $0-80
	MOVD c_base+0(FP), R0
	MOVD c_len+8(FP), R1
	MOVD i+24(FP), R2
	MOVD d_base+32(FP), R3
	MOVD d_len+40(FP), R4
	MOVD n+56(FP), R5
	MOVD $·shortEscapes(SB), R8

	Block // stop
	Loop // turn
		// Done when c is.
		Get R2
		Get R1
		I64GeS
		BrIf $1

		// While eight bytes fit in c and in d: copy them, and find the
		// first quote, backslash or control byte (stringStops).
		Get R2
		I64Const $8
		I64Add
		Get R1
		I64LeS
		Get R5
		I64Const $8
		I64Add
		Get R4
		I64LeS
		I32And
		If
			DADDR
			Get R0
			Get R2
			I64Add
			I32WrapI64
			I64Load $0
			Tee R6
			I64Store $0
			STRINGSTOPS(R6)
			Tee R7
			I64Eqz
			If
				ADD(R2, 8)
				ADD(R5, 8)
				Br $2 // turn
			End

			// Keep the bytes before it.
			Get R7
			I64Ctz
			I64Const $3
			I64ShrU
			Tee R7
			Get R2
			I64Add
			Set R2
			Get R5
			Get R7
			I64Add
			Set R5
			Get R0
			Get R2
			I64Add
			I32WrapI64
			I64Load8U $0
			Set R6
		Else
			// The last bytes of c, or of room in d: one a turn.
			Get R5
			Get R4
			I64GeS
			BrIf $2 // stop
			Get R0
			Get R2
			I64Add
			I32WrapI64
			I64Load8U $0
			Tee R6
			I64Const $0x5c
			I64Ne
			Get R6
			I64Const $0x22
			I64Ne
			I32And
			Get R6
			I64Const $0x20
			I64GeU
			I32And
			If
				DADDR
				Get R6
				I64Store8 $0
				ADD(R2, 1)
				ADD(R5, 1)
				Br $2 // turn
			End
		End

		// A quote, a backslash or a control byte at c[i], in R6. An escape
		// with its letter in c and room for a rune in d; anything else is
		// the Go loop's.
		Get R6
		I64Const $0x5c
		I64Ne
		BrIf $1 // stop
		Get R2
		I64Const $1
		I64Add
		Get R1
		I64GeS
		Get R5
		I64Const $4
		I64Add
		Get R4
		I64GtS
		I32Or
		BrIf $1 // stop

		// A one-letter escape.
		Get R0
		Get R2
		I64Add
		I32WrapI64
		I64Load8U $1
		Tee R6
		Get R8
		I64Add
		I32WrapI64
		I64Load8U $0
		Tee R10
		I64Const $0
		I64Ne
		If
			DADDR
			Get R10
			I64Store8 $0
			ADD(R2, 2)
			ADD(R5, 1)
			Br $1 // turn
		End

		// \u and four hex digits in c, else the Go loop's (which reads an
		// escape cut short or not hex as U+FFFD, as decodeRune does).
		Get R6
		I64Const $0x75
		I64Ne
		Get R2
		I64Const $6
		I64Add
		Get R1
		I64GtS
		I32Or
		BrIf $1 // stop
		I64Const $0
		Set R9
		I64Const $2
		Set R11
		Loop // digit
			Get R0
			Get R2
			I64Add
			Get R11
			I64Add
			I32WrapI64
			I64Load8U $0
			Tee R12
			I64Const $0x30
			I64Sub
			Tee R13
			I64Const $10
			I64GeU
			If
				// a-f in either case, else not hex
				Get R12
				I64Const $0x20
				I64Or
				I64Const $0x61
				I64Sub
				Tee R13
				I64Const $6
				I64GeU
				BrIf $3 // stop
				ADD(R13, 10)
			End
			Get R9
			I64Const $4
			I64Shl
			Get R13
			I64Or
			Set R9
			Get R11
			I64Const $1
			I64Add
			Tee R11
			I64Const $6
			I64LtU
			BrIf $0 // digit
		End

		// A surrogate, paired or not, is the Go loop's.
		Get R9
		I64Const $0xd800
		I64Sub
		I64Const $0x800
		I64LtU
		BrIf $1 // stop

		// The rune in UTF-8: one, two or three bytes.
		Get R9
		I64Const $0x80
		I64LtU
		If
			DADDR
			Get R9
			I64Store8 $0
			ADD(R5, 1)
		Else
			Get R9
			I64Const $0x800
			I64LtU
			If
				DADDR
				Get R9
				I64Const $6
				I64ShrU
				I64Const $0xc0
				I64Or
				I64Store8 $0
				DADDR
				Get R9
				CONT
				I64Store8 $1
				ADD(R5, 2)
			Else
				DADDR
				Get R9
				I64Const $12
				I64ShrU
				I64Const $0xe0
				I64Or
				I64Store8 $0
				DADDR
				Get R9
				I64Const $6
				I64ShrU
				CONT
				I64Store8 $1
				DADDR
				Get R9
				CONT
				I64Store8 $2
				ADD(R5, 3)
			End
		End
		ADD(R2, 6)
		Br $0 // turn
	End
	End

	MOVD R2, ci+64(FP)
	MOVD R5, dn+72(FP)
	RET
