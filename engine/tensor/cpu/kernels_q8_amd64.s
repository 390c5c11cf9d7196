// Int8 dot products of Q8_0 weight rows with activations quantized to Q8
// (AVX2, and AVX512-VNNI variants). Every kernel accumulates a (row, token)
// pair in one 8-lane register, block after block, and reduces it with
// HSUM8's order, so a product is bit-identical whichever kernel (one row,
// many rows, four tokens) computed it. kernels_generic.go holds the portable
// specification.

#include "textflag.h"
#include "kernels_amd64.h"

// func dotQ8Q8AVX2(w *byte, qx *int8, dx *float32, nb int, tbl *float32) float32
//
// sum over nb blocks of f16(w.d) * dx[b] * sum_i w.q[i]*qx[i]; w is ggml
// Q8_0 (34-byte blocks: f16 scale, 32 int8), qx/dx an activation row
// quantized to int8 with one float32 scale per 32. tbl is the f16->f32 table.
TEXT ·dotQ8Q8AVX2(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ qx+8(FP), DI
	MOVQ dx+16(FP), DX
	MOVQ nb+24(FP), CX
	MOVQ tbl+32(FP), R8
	VXORPS Y0, Y0, Y0
	VPCMPEQW Y7, Y7, Y7
	VPSRLW $15, Y7, Y7 // int16 ones

q8pair:
	CMPQ CX, $2
	JLT q8one
	VMOVDQU 2(SI), Y1
	VMOVDQU (DI), Y2
	VPSIGNB Y1, Y1, Y3
	VPSIGNB Y1, Y2, Y4
	VPMADDUBSW Y4, Y3, Y5
	VPMADDWD Y7, Y5, Y5
	VCVTDQ2PS Y5, Y5
	MOVWLZX (SI), AX
	VMOVSS (R8)(AX*4), X6
	VMULSS (DX), X6, X6
	VBROADCASTSS X6, Y6
	VFMADD231PS Y5, Y6, Y0

	VMOVDQU 36(SI), Y9
	VMOVDQU 32(DI), Y10
	VPSIGNB Y9, Y9, Y11
	VPSIGNB Y9, Y10, Y12
	VPMADDUBSW Y12, Y11, Y13
	VPMADDWD Y7, Y13, Y13
	VCVTDQ2PS Y13, Y13
	MOVWLZX 34(SI), AX
	VMOVSS (R8)(AX*4), X14
	VMULSS 4(DX), X14, X14
	VBROADCASTSS X14, Y14
	VFMADD231PS Y13, Y14, Y0

	ADDQ $68, SI
	ADDQ $64, DI
	ADDQ $8, DX
	SUBQ $2, CX
	JMP q8pair

q8one:
	CMPQ CX, $0
	JEQ q8done
	VMOVDQU 2(SI), Y1
	VMOVDQU (DI), Y2
	VPSIGNB Y1, Y1, Y3
	VPSIGNB Y1, Y2, Y4
	VPMADDUBSW Y4, Y3, Y5
	VPMADDWD Y7, Y5, Y5
	VCVTDQ2PS Y5, Y5
	MOVWLZX (SI), AX
	VMOVSS (R8)(AX*4), X6
	VMULSS (DX), X6, X6
	VBROADCASTSS X6, Y6
	VFMADD231PS Y5, Y6, Y0

q8done:
	HSUM8
	VZEROUPPER
	MOVSS X0, ret+40(FP)
	RET

// func dotQ8Q8RowsAVX2(w *byte, wstride int, nrows int, qx *int8, dx *float32, nb int, tbl *float32, out *float32, vnni bool)
//
// out[r] = dotQ8Q8(row r of w, qx, dx) for r < nrows, rows wstride bytes
// apart: a decode step's rows in one call. vnni selects VPDPBUSD.
TEXT ·dotQ8Q8RowsAVX2(SB), NOSPLIT, $0-65
	MOVQ w+0(FP), R13
	MOVQ wstride+8(FP), R14
	MOVQ nrows+16(FP), R15
	MOVQ tbl+48(FP), R8
	MOVQ out+56(FP), BX
	MOVBLZX vnni+64(FP), R12
	VPCMPEQW Y7, Y7, Y7
	VPSRLW $15, Y7, Y7 // int16 ones

rowloop:
	CMPQ R15, $0
	JEQ rowsdone
	MOVQ R13, SI
	MOVQ qx+24(FP), DI
	MOVQ dx+32(FP), DX
	MOVQ nb+40(FP), CX
	VXORPS Y0, Y0, Y0

blk:
	CMPQ CX, $2
	JLT blk1
	VMOVDQU 2(SI), Y1
	VMOVDQU (DI), Y2
	VPSIGNB Y1, Y1, Y3
	VPSIGNB Y1, Y2, Y4
	VMOVDQU 36(SI), Y9
	VMOVDQU 32(DI), Y10
	VPSIGNB Y9, Y9, Y11
	VPSIGNB Y9, Y10, Y12
	CMPQ R12, $0
	JEQ blkmadd
	VPXOR Y5, Y5, Y5
	VPDPBUSD Y4, Y3, Y5
	VPXOR Y13, Y13, Y13
	VPDPBUSD Y12, Y11, Y13
	JMP blkcvt

blkmadd:
	VPMADDUBSW Y4, Y3, Y5
	VPMADDWD Y7, Y5, Y5
	VPMADDUBSW Y12, Y11, Y13
	VPMADDWD Y7, Y13, Y13

blkcvt:
	VCVTDQ2PS Y5, Y5
	MOVWLZX (SI), AX
	VMOVSS (R8)(AX*4), X6
	VMULSS (DX), X6, X6
	VBROADCASTSS X6, Y6
	VFMADD231PS Y5, Y6, Y0
	VCVTDQ2PS Y13, Y13
	MOVWLZX 34(SI), AX
	VMOVSS (R8)(AX*4), X14
	VMULSS 4(DX), X14, X14
	VBROADCASTSS X14, Y14
	VFMADD231PS Y13, Y14, Y0
	ADDQ $68, SI
	ADDQ $64, DI
	ADDQ $8, DX
	SUBQ $2, CX
	JMP blk

blk1:
	CMPQ CX, $0
	JEQ rowsum
	VMOVDQU 2(SI), Y1
	VMOVDQU (DI), Y2
	VPSIGNB Y1, Y1, Y3
	VPSIGNB Y1, Y2, Y4
	VPMADDUBSW Y4, Y3, Y5
	VPMADDWD Y7, Y5, Y5
	VCVTDQ2PS Y5, Y5
	MOVWLZX (SI), AX
	VMOVSS (R8)(AX*4), X6
	VMULSS (DX), X6, X6
	VBROADCASTSS X6, Y6
	VFMADD231PS Y5, Y6, Y0

rowsum:
	HSUM8
	VMOVSS X0, (BX)
	ADDQ $4, BX
	ADDQ R14, R13
	DECQ R15
	JMP rowloop

rowsdone:
	VZEROUPPER
	RET

// func dotQ8Q8x4RowsAVX2(w *byte, wstride int, nrows int, qx *int8, xstride int, dx *float32, nb int, tbl *float32, out *float32, ostride int, vnni bool)
//
// dotQ8Q8x4 for nrows weight rows (wstride bytes apart) in one call:
// out[r + k*ostride/4] = dotQ8Q8(row r, token k) for k < 4, ostride in
// bytes. Accumulation and reduction are dotQ8Q8x4's (and so dotQ8Q8's).
TEXT ·dotQ8Q8x4RowsAVX2(SB), NOSPLIT, $0-81
	MOVQ w+0(FP), R13
	MOVQ wstride+8(FP), R14
	MOVQ nrows+16(FP), R15
	MOVQ xstride+32(FP), R9
	MOVQ tbl+56(FP), R8
	MOVQ out+64(FP), BX
	MOVQ nb+48(FP), R10
	SHLQ $2, R10 // dx stride in bytes: nb*4
	VPCMPEQW Y10, Y10, Y10
	VPSRLW $15, Y10, Y10 // int16 ones

xrrow:
	CMPQ R15, $0
	JEQ xrdone
	MOVQ R13, SI
	MOVQ qx+24(FP), DI
	MOVQ dx+40(FP), DX
	MOVQ nb+48(FP), CX
	LEAQ (DI)(R9*2), R11
	LEAQ (DX)(R10*2), R12
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

xrblk:
	CMPQ CX, $0
	JEQ xrsum
	VMOVDQU 2(SI), Y4
	VPSIGNB Y4, Y4, Y5
	MOVWLZX (SI), AX
	VMOVSS (R8)(AX*4), X6
	CMPB vnni+80(FP), $0
	JEQ xrmadd

	VMOVDQU (DI), Y7
	VPSIGNB Y4, Y7, Y7
	VPXOR Y8, Y8, Y8
	VPDPBUSD Y7, Y5, Y8
	VMOVDQU (DI)(R9*1), Y7
	VPSIGNB Y4, Y7, Y7
	VPXOR Y11, Y11, Y11
	VPDPBUSD Y7, Y5, Y11
	VMOVDQU (R11), Y7
	VPSIGNB Y4, Y7, Y7
	VPXOR Y12, Y12, Y12
	VPDPBUSD Y7, Y5, Y12
	VMOVDQU (R11)(R9*1), Y7
	VPSIGNB Y4, Y7, Y7
	VPXOR Y13, Y13, Y13
	VPDPBUSD Y7, Y5, Y13
	JMP xrscale

xrmadd:
	VMOVDQU (DI), Y7
	VPSIGNB Y4, Y7, Y7
	VPMADDUBSW Y7, Y5, Y8
	VPMADDWD Y10, Y8, Y8
	VMOVDQU (DI)(R9*1), Y7
	VPSIGNB Y4, Y7, Y7
	VPMADDUBSW Y7, Y5, Y11
	VPMADDWD Y10, Y11, Y11
	VMOVDQU (R11), Y7
	VPSIGNB Y4, Y7, Y7
	VPMADDUBSW Y7, Y5, Y12
	VPMADDWD Y10, Y12, Y12
	VMOVDQU (R11)(R9*1), Y7
	VPSIGNB Y4, Y7, Y7
	VPMADDUBSW Y7, Y5, Y13
	VPMADDWD Y10, Y13, Y13

xrscale:
	VCVTDQ2PS Y8, Y8
	VMULSS (DX), X6, X9
	VBROADCASTSS X9, Y9
	VFMADD231PS Y8, Y9, Y0
	VCVTDQ2PS Y11, Y11
	VMULSS (DX)(R10*1), X6, X9
	VBROADCASTSS X9, Y9
	VFMADD231PS Y11, Y9, Y1
	VCVTDQ2PS Y12, Y12
	VMULSS (R12), X6, X9
	VBROADCASTSS X9, Y9
	VFMADD231PS Y12, Y9, Y2
	VCVTDQ2PS Y13, Y13
	VMULSS (R12)(R10*1), X6, X9
	VBROADCASTSS X9, Y9
	VFMADD231PS Y13, Y9, Y3

	ADDQ $34, SI
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $4, DX
	ADDQ $4, R12
	DECQ CX
	JMP xrblk

xrsum:
	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	MOVQ ostride+72(FP), AX
	VMOVSS X0, (BX)
	VEXTRACTPS $1, X0, (BX)(AX*1)
	VEXTRACTPS $2, X0, (BX)(AX*2)
	LEAQ (BX)(AX*2), DX
	VEXTRACTPS $3, X0, (DX)(AX*1)
	ADDQ $4, BX
	ADDQ R14, R13
	DECQ R15
	JMP xrrow

xrdone:
	VZEROUPPER
	RET
