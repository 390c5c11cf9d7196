// The float32 exp of exp.go, eight lanes at a time (AVX2), and the Softmax
// and SwiGLU loops built on it. Each step is the same separately rounded
// float32 operation as exp32's, so every lane equals exp32 bit for bit.

#include "textflag.h"

DATA expc<>+0(SB)/4, $0x42b00000 // hi
DATA expc<>+4(SB)/4, $0x42b00000 // hi
DATA expc<>+8(SB)/4, $0x42b00000 // hi
DATA expc<>+12(SB)/4, $0x42b00000 // hi
DATA expc<>+16(SB)/4, $0x42b00000 // hi
DATA expc<>+20(SB)/4, $0x42b00000 // hi
DATA expc<>+24(SB)/4, $0x42b00000 // hi
DATA expc<>+28(SB)/4, $0x42b00000 // hi
DATA expc<>+32(SB)/4, $0xc2aeac4f // lo
DATA expc<>+36(SB)/4, $0xc2aeac4f // lo
DATA expc<>+40(SB)/4, $0xc2aeac4f // lo
DATA expc<>+44(SB)/4, $0xc2aeac4f // lo
DATA expc<>+48(SB)/4, $0xc2aeac4f // lo
DATA expc<>+52(SB)/4, $0xc2aeac4f // lo
DATA expc<>+56(SB)/4, $0xc2aeac4f // lo
DATA expc<>+60(SB)/4, $0xc2aeac4f // lo
DATA expc<>+64(SB)/4, $0x3fb8aa3b // log2e
DATA expc<>+68(SB)/4, $0x3fb8aa3b // log2e
DATA expc<>+72(SB)/4, $0x3fb8aa3b // log2e
DATA expc<>+76(SB)/4, $0x3fb8aa3b // log2e
DATA expc<>+80(SB)/4, $0x3fb8aa3b // log2e
DATA expc<>+84(SB)/4, $0x3fb8aa3b // log2e
DATA expc<>+88(SB)/4, $0x3fb8aa3b // log2e
DATA expc<>+92(SB)/4, $0x3fb8aa3b // log2e
DATA expc<>+96(SB)/4, $0x3f318000 // c1
DATA expc<>+100(SB)/4, $0x3f318000 // c1
DATA expc<>+104(SB)/4, $0x3f318000 // c1
DATA expc<>+108(SB)/4, $0x3f318000 // c1
DATA expc<>+112(SB)/4, $0x3f318000 // c1
DATA expc<>+116(SB)/4, $0x3f318000 // c1
DATA expc<>+120(SB)/4, $0x3f318000 // c1
DATA expc<>+124(SB)/4, $0x3f318000 // c1
DATA expc<>+128(SB)/4, $0xb95e8083 // c2
DATA expc<>+132(SB)/4, $0xb95e8083 // c2
DATA expc<>+136(SB)/4, $0xb95e8083 // c2
DATA expc<>+140(SB)/4, $0xb95e8083 // c2
DATA expc<>+144(SB)/4, $0xb95e8083 // c2
DATA expc<>+148(SB)/4, $0xb95e8083 // c2
DATA expc<>+152(SB)/4, $0xb95e8083 // c2
DATA expc<>+156(SB)/4, $0xb95e8083 // c2
DATA expc<>+160(SB)/4, $0x39506967 // p0
DATA expc<>+164(SB)/4, $0x39506967 // p0
DATA expc<>+168(SB)/4, $0x39506967 // p0
DATA expc<>+172(SB)/4, $0x39506967 // p0
DATA expc<>+176(SB)/4, $0x39506967 // p0
DATA expc<>+180(SB)/4, $0x39506967 // p0
DATA expc<>+184(SB)/4, $0x39506967 // p0
DATA expc<>+188(SB)/4, $0x39506967 // p0
DATA expc<>+192(SB)/4, $0x3ab743ce // p1
DATA expc<>+196(SB)/4, $0x3ab743ce // p1
DATA expc<>+200(SB)/4, $0x3ab743ce // p1
DATA expc<>+204(SB)/4, $0x3ab743ce // p1
DATA expc<>+208(SB)/4, $0x3ab743ce // p1
DATA expc<>+212(SB)/4, $0x3ab743ce // p1
DATA expc<>+216(SB)/4, $0x3ab743ce // p1
DATA expc<>+220(SB)/4, $0x3ab743ce // p1
DATA expc<>+224(SB)/4, $0x3c088908 // p2
DATA expc<>+228(SB)/4, $0x3c088908 // p2
DATA expc<>+232(SB)/4, $0x3c088908 // p2
DATA expc<>+236(SB)/4, $0x3c088908 // p2
DATA expc<>+240(SB)/4, $0x3c088908 // p2
DATA expc<>+244(SB)/4, $0x3c088908 // p2
DATA expc<>+248(SB)/4, $0x3c088908 // p2
DATA expc<>+252(SB)/4, $0x3c088908 // p2
DATA expc<>+256(SB)/4, $0x3d2aa9c1 // p3
DATA expc<>+260(SB)/4, $0x3d2aa9c1 // p3
DATA expc<>+264(SB)/4, $0x3d2aa9c1 // p3
DATA expc<>+268(SB)/4, $0x3d2aa9c1 // p3
DATA expc<>+272(SB)/4, $0x3d2aa9c1 // p3
DATA expc<>+276(SB)/4, $0x3d2aa9c1 // p3
DATA expc<>+280(SB)/4, $0x3d2aa9c1 // p3
DATA expc<>+284(SB)/4, $0x3d2aa9c1 // p3
DATA expc<>+288(SB)/4, $0x3e2aaaaa // p4
DATA expc<>+292(SB)/4, $0x3e2aaaaa // p4
DATA expc<>+296(SB)/4, $0x3e2aaaaa // p4
DATA expc<>+300(SB)/4, $0x3e2aaaaa // p4
DATA expc<>+304(SB)/4, $0x3e2aaaaa // p4
DATA expc<>+308(SB)/4, $0x3e2aaaaa // p4
DATA expc<>+312(SB)/4, $0x3e2aaaaa // p4
DATA expc<>+316(SB)/4, $0x3e2aaaaa // p4
DATA expc<>+320(SB)/4, $0x3f000000 // p5
DATA expc<>+324(SB)/4, $0x3f000000 // p5
DATA expc<>+328(SB)/4, $0x3f000000 // p5
DATA expc<>+332(SB)/4, $0x3f000000 // p5
DATA expc<>+336(SB)/4, $0x3f000000 // p5
DATA expc<>+340(SB)/4, $0x3f000000 // p5
DATA expc<>+344(SB)/4, $0x3f000000 // p5
DATA expc<>+348(SB)/4, $0x3f000000 // p5
DATA expc<>+352(SB)/4, $0x3f800000 // one
DATA expc<>+356(SB)/4, $0x3f800000 // one
DATA expc<>+360(SB)/4, $0x3f800000 // one
DATA expc<>+364(SB)/4, $0x3f800000 // one
DATA expc<>+368(SB)/4, $0x3f800000 // one
DATA expc<>+372(SB)/4, $0x3f800000 // one
DATA expc<>+376(SB)/4, $0x3f800000 // one
DATA expc<>+380(SB)/4, $0x3f800000 // one
DATA expc<>+384(SB)/4, $0x0000007f // bias 127
DATA expc<>+388(SB)/4, $0x0000007f // bias 127
DATA expc<>+392(SB)/4, $0x0000007f // bias 127
DATA expc<>+396(SB)/4, $0x0000007f // bias 127
DATA expc<>+400(SB)/4, $0x0000007f // bias 127
DATA expc<>+404(SB)/4, $0x0000007f // bias 127
DATA expc<>+408(SB)/4, $0x0000007f // bias 127
DATA expc<>+412(SB)/4, $0x0000007f // bias 127
GLOBL expc<>(SB), RODATA|NOPTR, $416

// EXP8 sets Y0 = exp32(Y0) lane by lane. Clobbers Y1, Y2, Y3.
#define EXP8 \
	VMINPS expc<>+0(SB), Y0, Y0; \
	VMAXPS expc<>+32(SB), Y0, Y0; \
	VMULPS expc<>+64(SB), Y0, Y1; \
	VROUNDPS $0, Y1, Y1; \
	VMULPS expc<>+96(SB), Y1, Y2; \
	VSUBPS Y2, Y0, Y0; \
	VMULPS expc<>+128(SB), Y1, Y2; \
	VSUBPS Y2, Y0, Y0; \
	VMULPS Y0, Y0, Y3; \
	VMULPS expc<>+160(SB), Y0, Y2; \
	VADDPS expc<>+192(SB), Y2, Y2; \
	VMULPS Y0, Y2, Y2; \
	VADDPS expc<>+224(SB), Y2, Y2; \
	VMULPS Y0, Y2, Y2; \
	VADDPS expc<>+256(SB), Y2, Y2; \
	VMULPS Y0, Y2, Y2; \
	VADDPS expc<>+288(SB), Y2, Y2; \
	VMULPS Y0, Y2, Y2; \
	VADDPS expc<>+320(SB), Y2, Y2; \
	VMULPS Y3, Y2, Y2; \
	VADDPS Y0, Y2, Y2; \
	VADDPS expc<>+352(SB), Y2, Y2; \
	VCVTPS2DQ Y1, Y1; \
	VPADDD expc<>+384(SB), Y1, Y1; \
	VPSLLD $23, Y1, Y1; \
	VMULPS Y1, Y2, Y0

// func softmaxExpAVX2(x *float32, n int, m float32, lanes *float32)
//
// x[i] = exp32(x[i] - m) for i < n (a multiple of 8, > 0); lanes[k] +=
// the sum of x[i] over i%8 == k, added in order of i.
TEXT ·softmaxExpAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS m+16(FP), Y5
	MOVQ lanes+24(FP), DI
	VMOVUPS (DI), Y4

smloop:
	VMOVUPS (SI), Y0
	VSUBPS Y5, Y0, Y0
	EXP8
	VMOVUPS Y0, (SI)
	VADDPS Y0, Y4, Y4
	ADDQ $32, SI
	SUBQ $8, CX
	JNE smloop

	VMOVUPS Y4, (DI)
	VZEROUPPER
	RET

// func swigluAVX2(out, gate, up *float32, n int)
//
// out[i] = gate[i] / (1 + exp32(-gate[i])) * up[i] for i < n (a multiple of
// 8, > 0).
TEXT ·swigluAVX2(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DX
	MOVQ gate+8(FP), SI
	MOVQ up+16(FP), DI
	MOVQ n+24(FP), CX
	VXORPS Y6, Y6, Y6

sgloop:
	VMOVUPS (SI), Y4
	VSUBPS Y4, Y6, Y0
	EXP8
	VADDPS expc<>+352(SB), Y0, Y0
	VDIVPS Y0, Y4, Y0
	VMULPS (DI), Y0, Y0
	VMOVUPS Y0, (DX)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JNE sgloop

	VZEROUPPER
	RET

DATA q8qc<>+0(SB)/4, $0x7fffffff // abs mask
DATA q8qc<>+4(SB)/4, $0x42fe0000 // 127.0
DATA q8qc<>+8(SB)/4, $0x3f800000 // 1.0
DATA q8qc<>+12(SB)/4, $0
DATA q8qc<>+16(SB)/4, $0 // VPERMD order after the packs
DATA q8qc<>+20(SB)/4, $4
DATA q8qc<>+24(SB)/4, $1
DATA q8qc<>+28(SB)/4, $5
DATA q8qc<>+32(SB)/4, $2
DATA q8qc<>+36(SB)/4, $6
DATA q8qc<>+40(SB)/4, $3
DATA q8qc<>+44(SB)/4, $7
GLOBL q8qc<>(SB), RODATA|NOPTR, $48

// func quantizeRowQ8AVX2(q *int8, d *float32, x *float32, nb int)
//
// quantizeRowQ8Go for nb > 0 blocks: d = max|x|/127, q = round-half-even(x
// * (1/d)) (0 for an all-zero block); VCVTPS2DQ rounds as the Go code's
// 1.5*2^23 trick does.
TEXT ·quantizeRowQ8AVX2(SB), NOSPLIT, $0-32
	MOVQ q+0(FP), DI
	MOVQ d+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ nb+24(FP), CX
	VBROADCASTSS q8qc<>+0(SB), Y15
	VMOVDQU q8qc<>+16(SB), Y14
	VXORPS X13, X13, X13

qloop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VANDPS Y15, Y0, Y4
	VANDPS Y15, Y1, Y5
	VANDPS Y15, Y2, Y6
	VANDPS Y15, Y3, Y7
	VMAXPS Y5, Y4, Y4
	VMAXPS Y7, Y6, Y6
	VMAXPS Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS X5, X4, X4
	VPERMILPS $0x4E, X4, X5
	VMAXPS X5, X4, X4
	VPERMILPS $0xB1, X4, X5
	VMAXPS X5, X4, X4 // amax in every lane
	VDIVSS q8qc<>+4(SB), X4, X4 // s = amax / 127
	VMOVSS X4, (DX)
	VXORPS X5, X5, X5
	VUCOMISS X13, X4
	JEQ qzero
	VMOVSS q8qc<>+8(SB), X5
	VDIVSS X4, X5, X5 // id = 1 / s

qzero:
	VBROADCASTSS X5, Y5
	VMULPS Y5, Y0, Y0
	VMULPS Y5, Y1, Y1
	VMULPS Y5, Y2, Y2
	VMULPS Y5, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y14, Y0
	VMOVDQU Y0, (DI)
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNE qloop

	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int) float32
//
// max of x[:n] for n a multiple of 8, > 0 (no NaNs).
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VMOVUPS (SI), Y0

mxloop:
	VMAXPS (SI), Y0, Y0
	ADDQ $32, SI
	SUBQ $8, CX
	JNE mxloop

	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4E, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xB1, X0, X1
	VMAXPS X1, X0, X0
	VZEROUPPER
	MOVSS X0, ret+16(FP)
	RET

// func scaleAVX2(x *float32, n int, a float32)
//
// x[i] *= a for i < n, n a multiple of 8, > 0.
TEXT ·scaleAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS a+16(FP), Y1

scloop:
	VMULPS (SI), Y1, Y0
	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	SUBQ $8, CX
	JNE scloop

	VZEROUPPER
	RET
