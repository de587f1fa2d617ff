#include "textflag.h"

// func hint(p unsafe.Pointer, n uintptr)
//
// PREFETCHT0 of every line of the n bytes at p, first line first. A
// prefetch loads nothing into a register and never faults.
TEXT ·hint(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ	p+0(FP), AX
	MOVQ	n+8(FP), CX
	ADDQ	AX, CX
	ANDQ	$~63, AX
loop:
	PREFETCHT0	(AX)
	ADDQ	$64, AX
	CMPQ	AX, CX
	JB	loop
	RET
