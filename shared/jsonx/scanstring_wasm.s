#include "textflag.h"
#include "stops_wasm.h"

// func scanString(d []byte, i int) (end int, escaped, ok bool)
//
// From the byte after the opening quote at i: eight bytes a turn while none
// is a quote, a backslash or a control byte (the first such byte is found
// exactly, see stringStops), then that byte: a quote ends the string, a
// backslash must start one of the escapes of shortEscapes or \u and four
// hex digits, and anything else (a control byte, the end of d) is an error
// at its index.
//
// Registers: R0 d's address, R1 len(d), R2 the index, R3 escaped, R4 the
// byte there, R5 eight bytes, R6 &shortEscapes, R7 a hex digit's index.
TEXT ·scanString(SB), NOSPLIT, $0-42
	MOVD d_base+0(FP), R0
	MOVD d_len+8(FP), R1
	MOVD i+24(FP), R2
	MOVD $·shortEscapes(SB), R6
	I64Const $0
	Set R3
	Get R2
	I64Const $1
	I64Add
	Set R2

	Block // error at R2
	Block // closing quote at R2
	Loop // stop
		Block // a byte to look at
		Loop // eight plain bytes
			Get R2
			I64Const $8
			I64Add
			Get R1
			I64GtS
			BrIf $1
			Get R0
			Get R2
			I64Add
			I32WrapI64
			I64Load $0
			Set R5
			STRINGSTOPS(R5)
			Tee R5
			I64Eqz
			If
				Get R2
				I64Const $8
				I64Add
				Set R2
				Br $1
			End
			Get R2
			Get R5
			I64Ctz
			I64Const $3
			I64ShrU
			I64Add
			Set R2
		End
		End

		Get R2
		Get R1
		I64GeS
		BrIf $2 // error: no closing quote
		Get R0
		Get R2
		I64Add
		I32WrapI64
		I64Load8U $0
		Tee R4
		I64Const $34 // "
		I64Eq
		BrIf $1 // closing quote

		Get R4
		I64Const $92 // backslash
		I64Eq
		If
			I64Const $1
			Set R3
			Get R2
			I64Const $2
			I64Add
			Get R1
			I64GtS
			BrIf $3 // error: nothing after the backslash
			Get R0
			Get R2
			I64Add
			I32WrapI64
			I64Load8U $1
			Tee R4
			Get R6
			I64Add
			I32WrapI64
			I64Load8U $0
			I64Eqz
			I32Eqz
			If
				Get R2
				I64Const $2
				I64Add
				Set R2
				Br $2 // next stop
			End
			Get R4
			I64Const $117 // u
			I64Ne
			BrIf $3 // error: not an escape
			Get R2
			I64Const $6
			I64Add
			Get R1
			I64GtS
			BrIf $3 // error: fewer than four digits
			Get R2
			I64Const $2
			I64Add
			Set R7
			Block // four hex digits
			Loop
				Get R7
				Get R2
				I64Const $6
				I64Add
				I64GeS
				BrIf $1
				Get R0
				Get R7
				I64Add
				I32WrapI64
				I64Load8U $0
				Tee R4
				I64Const $48 // 0
				I64Sub
				I64Const $10
				I64LtU
				Get R4
				I64Const $32
				I64Or
				I64Const $97 // a
				I64Sub
				I64Const $6
				I64LtU
				I32Or
				I32Eqz
				BrIf $5 // error: not a hex digit
				Get R7
				I64Const $1
				I64Add
				Set R7
				Br $0
			End
			End
			Get R2
			I64Const $6
			I64Add
			Set R2
			Br $1 // next stop
		End

		Get R4
		I64Const $32
		I64LtU
		BrIf $2 // error: a control byte
		Get R2
		I64Const $1
		I64Add
		Set R2
		Br $0
	End
	End
	// The closing quote.
	Get SP
	Get R2
	I64Const $1
	I64Add
	I64Store end+32(FP)
	Get SP
	Get R3
	I64Store8 escaped+40(FP)
	Get SP
	I64Const $1
	I64Store8 ok+41(FP)
	RET
	End
	// An error at R2.
	Get SP
	Get R2
	I64Store end+32(FP)
	Get SP
	Get R3
	I64Store8 escaped+40(FP)
	Get SP
	I64Const $0
	I64Store8 ok+41(FP)
	RET
