// AVX2/FMA/F16C kernels (and an AVX512-VNNI variant of the int8 dot). The
// Go fallbacks in kernels_generic.go are the specification; kernels_test.go
// compares the two.

#include "textflag.h"

// HSUM8 reduces the eight lanes a of Y0 to X0[0] =
// ((a0+a1)+(a2+a3)) + ((a4+a5)+(a6+a7)), the order in which the
// four-row kernels (VHADDPS of four accumulators, then low + high half)
// reduce each of theirs: a result never depends on which kernel computed it.
// Clobbers X1.
#define HSUM8 \
	VHADDPS Y0, Y0, Y0; \
	VHADDPS Y0, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDSS X1, X0, X0

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
	VXORPS Y8, Y8, Y8
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

// func dotQ8Q8x4VNNI(w *byte, qx *int8, dx *float32, nb int, tbl *float32, xstride int, out *float32)
//
// The same dot for one weight row against four activation rows (qx + k*xstride
// bytes, dx + k*nb floats), out[k] = result k. Needs AVX512-VNNI and AVX512VL
// (VPDPBUSD on 256-bit registers).
TEXT ·dotQ8Q8x4VNNI(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ qx+8(FP), DI
	MOVQ dx+16(FP), DX
	MOVQ nb+24(FP), CX
	MOVQ tbl+32(FP), R8
	MOVQ xstride+40(FP), R9
	MOVQ CX, R10
	SHLQ $2, R10 // dx stride in bytes: nb*4
	LEAQ (DI)(R9*2), R11 // qx row 2
	LEAQ (DX)(R10*2), R12 // dx row 2
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

x4loop:
	CMPQ CX, $0
	JEQ x4done
	VMOVDQU 2(SI), Y4
	VPSIGNB Y4, Y4, Y5 // |w|
	MOVWLZX (SI), AX
	VBROADCASTSS (R8)(AX*4), Y6 // f16(w.d)

	// row 0
	VMOVDQU (DI), Y7
	VPSIGNB Y4, Y7, Y7
	VPXOR Y8, Y8, Y8
	VPDPBUSD Y7, Y5, Y8
	VCVTDQ2PS Y8, Y8
	VBROADCASTSS (DX), Y9
	VMULPS Y6, Y9, Y9
	VFMADD231PS Y8, Y9, Y0
	// row 1
	VMOVDQU (DI)(R9*1), Y7
	VPSIGNB Y4, Y7, Y7
	VPXOR Y8, Y8, Y8
	VPDPBUSD Y7, Y5, Y8
	VCVTDQ2PS Y8, Y8
	VBROADCASTSS (DX)(R10*1), Y9
	VMULPS Y6, Y9, Y9
	VFMADD231PS Y8, Y9, Y1
	// row 2
	VMOVDQU (R11), Y7
	VPSIGNB Y4, Y7, Y7
	VPXOR Y8, Y8, Y8
	VPDPBUSD Y7, Y5, Y8
	VCVTDQ2PS Y8, Y8
	VBROADCASTSS (R12), Y9
	VMULPS Y6, Y9, Y9
	VFMADD231PS Y8, Y9, Y2
	// row 3
	VMOVDQU (R11)(R9*1), Y7
	VPSIGNB Y4, Y7, Y7
	VPXOR Y8, Y8, Y8
	VPDPBUSD Y7, Y5, Y8
	VCVTDQ2PS Y8, Y8
	VBROADCASTSS (R12)(R10*1), Y9
	VMULPS Y6, Y9, Y9
	VFMADD231PS Y8, Y9, Y3

	ADDQ $34, SI
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $4, DX
	ADDQ $4, R12
	DECQ CX
	JMP x4loop

x4done:
	MOVQ out+48(FP), AX
	// horizontal sums: reduce Y0..Y3 to four floats
	VHADDPS Y1, Y0, Y0 // [a01 a23 b01 b23 | a45 a67 b45 b67]
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0 // [a b c d | a' b' c' d'] partial
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVUPS X0, (AX)
	VZEROUPPER
	RET

// func dotQ8Q8x4AVX2(w *byte, qx *int8, dx *float32, nb int, tbl *float32, xstride int, out *float32)
//
// dotQ8Q8x4VNNI with VPMADDUBSW+VPMADDWD instead of VPDPBUSD.
TEXT ·dotQ8Q8x4AVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ qx+8(FP), DI
	MOVQ dx+16(FP), DX
	MOVQ nb+24(FP), CX
	MOVQ tbl+32(FP), R8
	MOVQ xstride+40(FP), R9
	MOVQ CX, R10
	SHLQ $2, R10
	LEAQ (DI)(R9*2), R11
	LEAQ (DX)(R10*2), R12
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VPCMPEQW Y10, Y10, Y10
	VPSRLW $15, Y10, Y10 // int16 ones

a4loop:
	CMPQ CX, $0
	JEQ a4done
	VMOVDQU 2(SI), Y4
	VPSIGNB Y4, Y4, Y5
	MOVWLZX (SI), AX
	VBROADCASTSS (R8)(AX*4), Y6

	VMOVDQU (DI), Y7
	VPSIGNB Y4, Y7, Y7
	VPMADDUBSW Y7, Y5, Y8
	VPMADDWD Y10, Y8, Y8
	VCVTDQ2PS Y8, Y8
	VBROADCASTSS (DX), Y9
	VMULPS Y6, Y9, Y9
	VFMADD231PS Y8, Y9, Y0

	VMOVDQU (DI)(R9*1), Y7
	VPSIGNB Y4, Y7, Y7
	VPMADDUBSW Y7, Y5, Y8
	VPMADDWD Y10, Y8, Y8
	VCVTDQ2PS Y8, Y8
	VBROADCASTSS (DX)(R10*1), Y9
	VMULPS Y6, Y9, Y9
	VFMADD231PS Y8, Y9, Y1

	VMOVDQU (R11), Y7
	VPSIGNB Y4, Y7, Y7
	VPMADDUBSW Y7, Y5, Y8
	VPMADDWD Y10, Y8, Y8
	VCVTDQ2PS Y8, Y8
	VBROADCASTSS (R12), Y9
	VMULPS Y6, Y9, Y9
	VFMADD231PS Y8, Y9, Y2

	VMOVDQU (R11)(R9*1), Y7
	VPSIGNB Y4, Y7, Y7
	VPMADDUBSW Y7, Y5, Y8
	VPMADDWD Y10, Y8, Y8
	VCVTDQ2PS Y8, Y8
	VBROADCASTSS (R12)(R10*1), Y9
	VMULPS Y6, Y9, Y9
	VFMADD231PS Y8, Y9, Y3

	ADDQ $34, SI
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $4, DX
	ADDQ $4, R12
	DECQ CX
	JMP a4loop

a4done:
	MOVQ out+48(FP), AX
	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVUPS X0, (AX)
	VZEROUPPER
	RET

// func dotF16AVX2(w *uint16, x *float32, n int) float32
//
// sum_i f16(w[i]) * x[i] for n a multiple of 16.
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5

f16quad:
	CMPQ CX, $32
	JLT f16pair
	VCVTPH2PS (SI), Y2
	VCVTPH2PS 16(SI), Y3
	VCVTPH2PS 32(SI), Y6
	VCVTPH2PS 48(SI), Y7
	VFMADD231PS (DI), Y2, Y0
	VFMADD231PS 32(DI), Y3, Y1
	VFMADD231PS 64(DI), Y6, Y4
	VFMADD231PS 96(DI), Y7, Y5
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP f16quad

f16pair:
	CMPQ CX, $16
	JLT f16done
	VCVTPH2PS (SI), Y2
	VCVTPH2PS 16(SI), Y3
	VFMADD231PS (DI), Y2, Y0
	VFMADD231PS 32(DI), Y3, Y1
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP f16pair

f16done:
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotF32AVX2(a, b *float32, n int) float32
//
// sum_i a[i]*b[i] for n a multiple of 16.
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5

f32quad:
	CMPQ CX, $32
	JLT f32pair
	VMOVUPS (SI), Y2
	VMOVUPS 32(SI), Y3
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VFMADD231PS (DI), Y2, Y0
	VFMADD231PS 32(DI), Y3, Y1
	VFMADD231PS 64(DI), Y6, Y4
	VFMADD231PS 96(DI), Y7, Y5
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP f32quad

f32pair:
	CMPQ CX, $16
	JLT f32done
	VMOVUPS (SI), Y2
	VMOVUPS 32(SI), Y3
	VFMADD231PS (DI), Y2, Y0
	VFMADD231PS 32(DI), Y3, Y1
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP f32pair

f32done:
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func axpyAVX2(y *float32, a float32, x *float32, n int)
//
// y[i] += a*x[i] for n a multiple of 8.
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	VBROADCASTSS a+8(FP), Y0
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX

axloop:
	CMPQ CX, $8
	JLT axdone
	VMOVUPS (DI), Y1
	VFMADD231PS (SI), Y0, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP axloop

axdone:
	VZEROUPPER
	RET

// func f16ToF32AVX2(dst *float32, src *uint16, n int)
//
// dst[i] = f16(src[i]) for n a multiple of 8.
TEXT ·f16ToF32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

cvloop:
	CMPQ CX, $8
	JLT cvdone
	VCVTPH2PS (SI), Y0
	VMOVUPS Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP cvloop

cvdone:
	VZEROUPPER
	RET

// func attnScoresAVX2(sc *float32, q *float32, k *float32, n int, stride int, hd int, scale float32)
//
// sc[j] = scale * sum_c q[c]*k[j*stride/4 + c] for j < n; stride in bytes,
// hd a multiple of 8. Four keys at a time keep four FMA chains in flight.
TEXT ·attnScoresAVX2(SB), NOSPLIT, $0-52
	MOVQ sc+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ k+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ stride+32(FP), R9
	MOVQ hd+40(FP), R10
	VBROADCASTSS scale+48(FP), X15

sc4:
	CMPQ CX, $4
	JLT sc1
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	LEAQ (DX)(R9*2), R11 // key j+2
	XORQ AX, AX // byte offset in the head
	MOVQ R10, BX
	SHLQ $2, BX // hd*4 bytes

sc4in:
	VMOVUPS (SI)(AX*1), Y4
	VFMADD231PS (DX)(AX*1), Y4, Y0
	ADDQ R9, DX
	VFMADD231PS (DX)(AX*1), Y4, Y1
	SUBQ R9, DX
	VFMADD231PS (R11)(AX*1), Y4, Y2
	ADDQ R9, R11
	VFMADD231PS (R11)(AX*1), Y4, Y3
	SUBQ R9, R11
	ADDQ $32, AX
	CMPQ AX, BX
	JLT sc4in

	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMULPS X15, X0, X0
	VMOVUPS X0, (DI)
	ADDQ $16, DI
	LEAQ (DX)(R9*4), DX
	SUBQ $4, CX
	JMP sc4

sc1:
	CMPQ CX, $0
	JEQ scdone
	VXORPS Y0, Y0, Y0
	XORQ AX, AX
	MOVQ R10, BX
	SHLQ $2, BX

sc1in:
	VMOVUPS (SI)(AX*1), Y4
	VFMADD231PS (DX)(AX*1), Y4, Y0
	ADDQ $32, AX
	CMPQ AX, BX
	JLT sc1in

	HSUM8
	VMULSS X15, X0, X0
	VMOVSS X0, (DI)
	ADDQ $4, DI
	ADDQ R9, DX
	DECQ CX
	JMP sc1

scdone:
	VZEROUPPER
	RET

// func attnMixAVX2(out *float32, p *float32, v *float32, n int, stride int, hd int)
//
// out[c] = sum_j p[j] * v[j*stride/4 + c] for c < hd (a multiple of 8);
// stride in bytes. Columns go in chunks of 32 (four accumulators) and 8.
TEXT ·attnMixAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ v+16(FP), DX
	MOVQ n+24(FP), R8
	MOVQ stride+32(FP), R9
	MOVQ hd+40(FP), R10

mx32:
	CMPQ R10, $32
	JLT mx8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ DX, R11
	XORQ CX, CX

mx32in:
	CMPQ CX, R8
	JGE mx32out
	VBROADCASTSS (SI)(CX*4), Y4
	VFMADD231PS (R11), Y4, Y0
	VFMADD231PS 32(R11), Y4, Y1
	VFMADD231PS 64(R11), Y4, Y2
	VFMADD231PS 96(R11), Y4, Y3
	ADDQ R9, R11
	INCQ CX
	JMP mx32in

mx32out:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, DX
	SUBQ $32, R10
	JMP mx32

mx8:
	CMPQ R10, $8
	JLT mxdone
	VXORPS Y0, Y0, Y0
	MOVQ DX, R11
	XORQ CX, CX

mx8in:
	CMPQ CX, R8
	JGE mx8out
	VBROADCASTSS (SI)(CX*4), Y4
	VFMADD231PS (R11), Y4, Y0
	ADDQ R9, R11
	INCQ CX
	JMP mx8in

mx8out:
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $8, R10
	JMP mx8

mxdone:
	VZEROUPPER
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
	VXORPS Y8, Y8, Y8

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

// func dotF32x2AVX2(w *float32, x *float32, n int, xstride int, out *float32)
//
// out[k] = sum_i w[i] * x[k*xstride/4 + i] for k < 2; n a multiple of 16,
// xstride in bytes: one (dequantized) weight row against two tokens, each
// with dotF32AVX2's accumulators (chunk c of 8 into accumulator c%4) and
// reduction, so out[k] is bit-identical to dotF32AVX2(x_k, w, n).
TEXT ·dotF32x2AVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ xstride+24(FP), R9
	LEAQ (DI)(R9*1), R11 // token 1
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

x2quad:
	CMPQ CX, $32
	JLT x2pair
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
	JMP x2quad

x2pair:
	CMPQ CX, $16
	JLT x2done
	VMOVUPS (SI), Y2
	VMOVUPS 32(SI), Y3
	VFMADD231PS (DI), Y2, Y0
	VFMADD231PS 32(DI), Y3, Y1
	VFMADD231PS (R11), Y2, Y8
	VFMADD231PS 32(R11), Y3, Y9
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, R11
	SUBQ $16, CX
	JMP x2pair

x2done:
	MOVQ out+32(FP), AX
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
	VMOVSS X8, 4(AX)
	VZEROUPPER
	RET
