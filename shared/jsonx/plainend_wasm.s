#include "textflag.h"
#include "stops_wasm.h"

// func plainEnd(d []byte, i int) int
//
// Eight bytes a turn while none is a quote, a backslash or a control byte
// (the first such byte is found exactly, see stringStops), then the last
// bytes one a turn.
//
// Registers: R0 d's address, R1 len(d), R2 the index, R3 eight bytes or the
// byte there.
TEXT ·plainEnd(SB), NOSPLIT, $0-40
	MOVD d_base+0(FP), R0
	MOVD d_len+8(FP), R1
	MOVD i+24(FP), R2

	Block // found at R2
	Block // the last bytes
	Loop // eight bytes
		Get R2
		I64Const $8
		I64Add
		Get R1
		I64GtS
		BrIf $1 // the last bytes
		Get R0
		Get R2
		I64Add
		I32WrapI64
		I64Load $0
		Set R3
		STRINGSTOPS(R3)
		Tee R3
		I64Eqz
		If
			ADD(R2, 8)
			Br $1 // eight bytes
		End
		Get R2
		Get R3
		I64Ctz
		I64Const $3
		I64ShrU
		I64Add
		Set R2
		Br $2 // found
	End
	End

	Loop // the last bytes
		Get R2
		Get R1
		I64GeS
		BrIf $1 // found: the end of d
		Get R0
		Get R2
		I64Add
		I32WrapI64
		I64Load8U $0
		Tee R3
		I64Const $0x22
		I64Eq
		Get R3
		I64Const $0x5c
		I64Eq
		I32Or
		Get R3
		I64Const $0x20
		I64LtU
		I32Or
		BrIf $1 // found
		ADD(R2, 1)
		Br $0
	End
	End

	MOVD R2, ret+32(FP)
	RET
