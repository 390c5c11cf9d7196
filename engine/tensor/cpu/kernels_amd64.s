// AVX2/FMA/F16C float kernels (the int8 ones are in kernels_q8_amd64.s). The
// Go fallbacks in kernels_generic.go are the specification; kernels_test.go
// compares the two. A kernel that handles several rows or tokens at once
// keeps, for each output, the accumulators and reduction order of the
// one-row kernel, so results do not depend on the batch size.

#include "textflag.h"
#include "kernels_amd64.h"

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
// hd a multiple of 8. Eight (then four) keys at a time keep as many FMA
// chains in flight; each key has one accumulator, reduced in HSUM8's order,
// whichever group it falls in.
TEXT ·attnScoresAVX2(SB), NOSPLIT, $0-52
	MOVQ sc+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ k+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ stride+32(FP), R9
	MOVQ hd+40(FP), R10
	VBROADCASTSS scale+48(FP), X15
	SHLQ $2, R10 // hd*4 bytes

sc8:
	CMPQ CX, $8
	JLT sc4
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	LEAQ (DX)(R9*1), R11 // key j+1
	LEAQ (DX)(R9*2), R12 // j+2
	LEAQ (R11)(R9*2), R13 // j+3
	LEAQ (DX)(R9*4), R14 // j+4
	LEAQ (R11)(R9*4), R15 // j+5
	LEAQ (R12)(R9*4), R8 // j+6
	LEAQ (R13)(R9*4), BX // j+7
	XORQ AX, AX // byte offset in the head

sc8in:
	VMOVUPS (SI)(AX*1), Y8
	VFMADD231PS (DX)(AX*1), Y8, Y0
	VFMADD231PS (R11)(AX*1), Y8, Y1
	VFMADD231PS (R12)(AX*1), Y8, Y2
	VFMADD231PS (R13)(AX*1), Y8, Y3
	VFMADD231PS (R14)(AX*1), Y8, Y4
	VFMADD231PS (R15)(AX*1), Y8, Y5
	VFMADD231PS (R8)(AX*1), Y8, Y6
	VFMADD231PS (BX)(AX*1), Y8, Y7
	ADDQ $32, AX
	CMPQ AX, R10
	JLT sc8in

	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMULPS X15, X0, X0
	VMOVUPS X0, (DI)
	VHADDPS Y5, Y4, Y4
	VHADDPS Y7, Y6, Y6
	VHADDPS Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VADDPS X5, X4, X4
	VMULPS X15, X4, X4
	VMOVUPS X4, 16(DI)
	ADDQ $32, DI
	LEAQ (DX)(R9*8), DX
	SUBQ $8, CX
	JMP sc8

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
// stride in bytes. Columns go in chunks of 64 (eight accumulators), 32
// (four) and 8; every column adds the keys in order.
TEXT ·attnMixAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ v+16(FP), DX
	MOVQ n+24(FP), R8
	MOVQ stride+32(FP), R9
	MOVQ hd+40(FP), R10

mx64:
	CMPQ R10, $64
	JLT mx32
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ DX, R11
	XORQ CX, CX

mx64in:
	CMPQ CX, R8
	JGE mx64out
	VBROADCASTSS (SI)(CX*4), Y8
	VFMADD231PS (R11), Y8, Y0
	VFMADD231PS 32(R11), Y8, Y1
	VFMADD231PS 64(R11), Y8, Y2
	VFMADD231PS 96(R11), Y8, Y3
	VFMADD231PS 128(R11), Y8, Y4
	VFMADD231PS 160(R11), Y8, Y5
	VFMADD231PS 192(R11), Y8, Y6
	VFMADD231PS 224(R11), Y8, Y7
	ADDQ R9, R11
	INCQ CX
	JMP mx64in

mx64out:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ $256, DI
	ADDQ $256, DX
	SUBQ $64, R10
	JMP mx64

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
