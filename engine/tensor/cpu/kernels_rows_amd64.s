// Prefill F32 kernels: dequantized weight rows against two tokens, rows
// looped inside the assembly. Each output keeps dotF32AVX2's accumulators
// and reduction, bit for bit.

#include "textflag.h"
// func dotF32x2RowsAVX2(w *float32, wstride int, nrows int, x *float32, xstride int, n int, out *float32, ostride int)
//
// dotF32x2AVX2 for nrows weight rows wstride bytes apart: out[r] and
// out[ostride/4 + r] get row r against tokens 0 and 1 (x, x + xstride
// bytes), each bit-identical to dotF32AVX2; n a multiple of 16, nrows > 0.
TEXT ·dotF32x2RowsAVX2(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), BX
	MOVQ wstride+8(FP), R10
	MOVQ nrows+16(FP), R8
	MOVQ x+24(FP), DX
	MOVQ xstride+32(FP), R9
	MOVQ n+40(FP), R13
	MOVQ out+48(FP), AX
	MOVQ ostride+56(FP), R12

r2row:
	MOVQ BX, SI
	MOVQ DX, DI
	LEAQ (DX)(R9*1), R11
	MOVQ R13, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

r2quad:
	CMPQ CX, $32
	JLT r2pair
	VMOVUPS (SI), Y2
	VMOVUPS 32(SI), Y3
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VFMADD231PS (DI), Y2, Y0
	VFMADD231PS 32(DI), Y3, Y1
	VFMADD231PS 64(DI), Y6, Y4
	VFMADD231PS 96(DI), Y7, Y5
	VFMADD231PS (R11), Y2, Y8
	VFMADD231PS 32(R11), Y3, Y9
	VFMADD231PS 64(R11), Y6, Y10
	VFMADD231PS 96(R11), Y7, Y11
	ADDQ $128, SI
	ADDQ $128, DI
	ADDQ $128, R11
	SUBQ $32, CX
	JMP r2quad

r2pair:
	CMPQ CX, $16
	JLT r2done
	VMOVUPS (SI), Y2
	VMOVUPS 32(SI), Y3
	VFMADD231PS (DI), Y2, Y0
	VFMADD231PS 32(DI), Y3, Y1
	VFMADD231PS (R11), Y2, Y8
	VFMADD231PS 32(R11), Y3, Y9

r2done:
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMOVSS X0, (AX)
	VADDPS Y10, Y8, Y8
	VADDPS Y11, Y9, Y9
	VADDPS Y9, Y8, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPS X9, X8, X8
	VHADDPS X8, X8, X8
	VHADDPS X8, X8, X8
	VMOVSS X8, (AX)(R12*1)
	ADDQ $4, AX
	ADDQ R10, BX
	DECQ R8
	JNZ r2row
	VZEROUPPER
	RET

// func dotF32x2x2RowsAVX512(w *float32, wstride int, npairs int, x *float32, xstride int, n int, out *float32, ostride int)
//
// dotF32x2RowsAVX2 two rows at a time (2npairs rows) in 512-bit registers:
// a 64-byte chunk pair (c, c+1) goes through one fused multiply-add whose
// low half is accumulator c%4 and high half accumulator (c+1)%4, so each
// (row, token) keeps dotF32AVX2's four accumulators, lane for lane, and its
// reduction ((acc0+acc2) + (acc1+acc3), then across lanes): bit-identical.
TEXT ·dotF32x2x2RowsAVX512(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), BX
	MOVQ wstride+8(FP), R10
	MOVQ npairs+16(FP), R8
	MOVQ x+24(FP), DX
	MOVQ xstride+32(FP), R9
	MOVQ n+40(FP), R13
	MOVQ out+48(FP), AX
	MOVQ ostride+56(FP), R12

x22row:
	MOVQ BX, SI
	LEAQ (BX)(R10*1), R14
	MOVQ DX, DI
	LEAQ (DX)(R9*1), R11
	MOVQ R13, CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7

x22quad:
	CMPQ CX, $32
	JLT x22pair
	VMOVUPS 0(SI), Z16
	VMOVUPS 0(R14), Z18
	VMOVUPS 0(DI), Z24
	VMOVUPS 0(R11), Z26
	VMOVUPS 64(SI), Z17
	VMOVUPS 64(R14), Z19
	VMOVUPS 64(DI), Z25
	VMOVUPS 64(R11), Z27
	VFMADD231PS Z24, Z16, Z0
	VFMADD231PS Z26, Z16, Z2
	VFMADD231PS Z24, Z18, Z4
	VFMADD231PS Z26, Z18, Z6
	VFMADD231PS Z25, Z17, Z1
	VFMADD231PS Z27, Z17, Z3
	VFMADD231PS Z25, Z19, Z5
	VFMADD231PS Z27, Z19, Z7
	ADDQ $128, SI
	ADDQ $128, R14
	ADDQ $128, DI
	ADDQ $128, R11
	SUBQ $32, CX
	JMP x22quad

x22pair:
	CMPQ CX, $16
	JLT x22done
	VMOVUPS 0(SI), Z16
	VMOVUPS 0(R14), Z18
	VMOVUPS 0(DI), Z24
	VMOVUPS 0(R11), Z26
	VFMADD231PS Z24, Z16, Z0
	VFMADD231PS Z26, Z16, Z2
	VFMADD231PS Z24, Z18, Z4
	VFMADD231PS Z26, Z18, Z6

x22done:
	VADDPS Z1, Z0, Z0 // [acc0+acc2 | acc1+acc3]
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMOVSS X0, 0(AX)
	VADDPS Z3, Z2, Z2 // [acc0+acc2 | acc1+acc3]
	VEXTRACTF64X4 $1, Z2, Y3
	VADDPS Y3, Y2, Y2
	VEXTRACTF128 $1, Y2, X3
	VADDPS X3, X2, X2
	VHADDPS X2, X2, X2
	VHADDPS X2, X2, X2
	VMOVSS X2, 0(AX)(R12*1)
	VADDPS Z5, Z4, Z4 // [acc0+acc2 | acc1+acc3]
	VEXTRACTF64X4 $1, Z4, Y5
	VADDPS Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VADDPS X5, X4, X4
	VHADDPS X4, X4, X4
	VHADDPS X4, X4, X4
	VMOVSS X4, 4(AX)
	VADDPS Z7, Z6, Z6 // [acc0+acc2 | acc1+acc3]
	VEXTRACTF64X4 $1, Z6, Y7
	VADDPS Y7, Y6, Y6
	VEXTRACTF128 $1, Y6, X7
	VADDPS X7, X6, X6
	VHADDPS X6, X6, X6
	VHADDPS X6, X6, X6
	VMOVSS X6, 4(AX)(R12*1)
	ADDQ $8, AX
	LEAQ (BX)(R10*2), BX
	DECQ R8
	JNZ x22row
	VZEROUPPER
	RET
