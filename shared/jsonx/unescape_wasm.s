#include "textflag.h"

// func unescapeRun(c []byte, i int, d []byte, n int) (ci, dn int)
//
// Registers: R0 c's address, R1 len(c), R2 i, R3 d's address, R4 len(d),
// R5 n, R6 eight bytes, R7 the backslash mask, R8 &shortEscapes, R10 what
// the escape stands for.
TEXT ·unescapeRun(SB), NOSPLIT, $0-80
	MOVD c_base+0(FP), R0
	MOVD c_len+8(FP), R1
	MOVD i+24(FP), R2
	MOVD d_base+32(FP), R3
	MOVD d_len+40(FP), R4
	MOVD n+56(FP), R5
	MOVD $·shortEscapes(SB), R8

	Block // stop
	Loop
		// Eight bytes must fit in c and in d.
		Get R2
		I64Const $8
		I64Add
		Get R1
		I64GtS
		Get R5
		I64Const $8
		I64Add
		Get R4
		I64GtS
		I32Or
		BrIf $1

		// Copy them, and find the first backslash (hasZero of x ^ '\\').
		Get R3
		Get R5
		I64Add
		I32WrapI64
		Get R0
		Get R2
		I64Add
		I32WrapI64
		I64Load $0
		Tee R6
		I64Store $0
		Get R6
		I64Const $0x5c5c5c5c5c5c5c5c
		I64Xor
		Tee R7
		I64Const $0x0101010101010101
		I64Sub
		Get R7
		I64Const $-1
		I64Xor
		I64And
		I64Const $-0x7f7f7f7f7f7f7f80
		I64And
		Tee R7
		I64Eqz
		If
			Get R2
			I64Const $8
			I64Add
			Set R2
			Get R5
			I64Const $8
			I64Add
			Set R5
			Br $1
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

		// A one-letter escape with its letter in c and room for a rune in
		// d; anything else is the Go loop's.
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
		BrIf $1
		Get R0
		Get R2
		I64Add
		I32WrapI64
		I64Load8U $1
		Get R8
		I64Add
		I32WrapI64
		I64Load8U $0
		Tee R10
		I64Eqz
		BrIf $1
		Get R3
		Get R5
		I64Add
		I32WrapI64
		Get R10
		I64Store8 $0
		Get R2
		I64Const $2
		I64Add
		Set R2
		Get R5
		I64Const $1
		I64Add
		Set R5
		Br $0
	End
	End

	MOVD R2, ci+64(FP)
	MOVD R5, dn+72(FP)
	RET
