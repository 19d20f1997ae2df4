#include "textflag.h"

// func clientRequest(args *[6]uintptr) uintptr
// Valgrind's amd64 client request: RAX points at the arguments, RDX holds
// the default result; the preamble rotates RDI by 3, 13, 61 and 51 bits (a
// no-op) and xchg %rbx,%rbx asks the request. Spelled as bytes so the
// assembler cannot choose another encoding.
TEXT ·clientRequest(SB), NOSPLIT, $0-16
	MOVQ args+0(FP), AX
	MOVQ $0, DX
	BYTE $0x48; BYTE $0xc1; BYTE $0xc7; BYTE $0x03
	BYTE $0x48; BYTE $0xc1; BYTE $0xc7; BYTE $0x0d
	BYTE $0x48; BYTE $0xc1; BYTE $0xc7; BYTE $0x3d
	BYTE $0x48; BYTE $0xc1; BYTE $0xc7; BYTE $0x33
	BYTE $0x48; BYTE $0x87; BYTE $0xdb
	MOVQ DX, ret+8(FP)
	RET
