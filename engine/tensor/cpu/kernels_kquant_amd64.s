// Native k-quant products (kquant.go): Q4_K, Q5_K and Q6_K weight rows against
// an activation row quantized to Q8_K, AVX2. Each block's integer sums are
// exact and combined in float32 in the order of dotQ4KGo/dotQ6KGo, so the
// results are theirs bit for bit (TestKQuantDotAsmMatchesGo).

#include "textflag.h"

// func dotQ4KRowsAVX2(w *byte, wstride int, nrows int, qs *int8, d *float32, s32 *int16, nb int, out *float32)
//
// out[r] = dotQ4KGo(row r of w, the Q8_K row (qs, d, s32)) for r < nrows,
// rows wstride bytes apart, nb blocks of 256 each.
TEXT ·dotQ4KRowsAVX2(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), R13
	MOVQ nrows+16(FP), R15
	MOVQ out+56(FP), R14
	VMOVDQU ·kqm0f(SB), Y15

q4row:
	CMPQ R15, $0
	JEQ q4done
	MOVQ R13, SI
	MOVQ qs+24(FP), DI
	MOVQ d+32(FP), DX
	MOVQ s32+40(FP), R9
	MOVQ nb+48(FP), CX
	VXORPS X0, X0, X0

q4blk:
	// The 6-bit scales and mins of the 8 sub-blocks (ggml's
	// get_scale_min_k4) as bytes [sc0..sc7, m0..m7]: the low 6 bits of
	// bytes 0-3 (sc0-3) and 4-7 (m0-3), the nibbles of bytes 8-11 (sc4-7
	// low, m4-7 high) with the top 2 bits of bytes 0-3 and 4-7 above them.
	VMOVDQU 4(SI), X1
	VPSHUFB ·kqsh1(SB), X1, X2 // q0-3 q8-11 q4-7 q8-11
	VPSHUFB ·kqsh2(SB), X1, X1 // 0 q0-3 0 q4-7
	VPSRLW $2, X1, X1
	VPAND ·kqm30(SB), X1, X1 // top 2 bits as bits 4-5
	VPSRLW $4, X2, X4
	VPAND ·kqm2(SB), X4, X4 // m4-7 low nibbles
	VPAND ·kqm1(SB), X2, X2 // sc0-3, sc4-7 low, m0-3
	VPOR X4, X2, X2
	VPOR X1, X2, X2
	VPMOVZXBW X2, X1
	VINSERTI128 $1, X1, Y1, Y1 // int16 scales, both lanes
	VPSRLDQ $8, X2, X2
	VPMOVZXBW X2, X2 // int16 mins
	VPMADDWD (R9), X2, X2 // mins times the sums of 32
	VPXOR Y3, Y3, Y3
	VMOVDQU 16(SI), Y4
	VPSRLW $4, Y4, Y5
	VPAND Y15, Y4, Y4
	VPAND Y15, Y5, Y5
	VPMADDUBSW 0(DI), Y4, Y4
	VPMADDUBSW 32(DI), Y5, Y5
	VPSHUFB ·kq4shuf+0(SB), Y1, Y6
	VPSHUFB ·kq4shuf+32(SB), Y1, Y7
	VPMADDWD Y6, Y4, Y4
	VPMADDWD Y7, Y5, Y5
	VPADDD Y4, Y3, Y3
	VPADDD Y5, Y3, Y3
	VMOVDQU 48(SI), Y4
	VPSRLW $4, Y4, Y5
	VPAND Y15, Y4, Y4
	VPAND Y15, Y5, Y5
	VPMADDUBSW 64(DI), Y4, Y4
	VPMADDUBSW 96(DI), Y5, Y5
	VPSHUFB ·kq4shuf+64(SB), Y1, Y6
	VPSHUFB ·kq4shuf+96(SB), Y1, Y7
	VPMADDWD Y6, Y4, Y4
	VPMADDWD Y7, Y5, Y5
	VPADDD Y4, Y3, Y3
	VPADDD Y5, Y3, Y3
	VMOVDQU 80(SI), Y4
	VPSRLW $4, Y4, Y5
	VPAND Y15, Y4, Y4
	VPAND Y15, Y5, Y5
	VPMADDUBSW 128(DI), Y4, Y4
	VPMADDUBSW 160(DI), Y5, Y5
	VPSHUFB ·kq4shuf+128(SB), Y1, Y6
	VPSHUFB ·kq4shuf+160(SB), Y1, Y7
	VPMADDWD Y6, Y4, Y4
	VPMADDWD Y7, Y5, Y5
	VPADDD Y4, Y3, Y3
	VPADDD Y5, Y3, Y3
	VMOVDQU 112(SI), Y4
	VPSRLW $4, Y4, Y5
	VPAND Y15, Y4, Y4
	VPAND Y15, Y5, Y5
	VPMADDUBSW 192(DI), Y4, Y4
	VPMADDUBSW 224(DI), Y5, Y5
	VPSHUFB ·kq4shuf+192(SB), Y1, Y6
	VPSHUFB ·kq4shuf+224(SB), Y1, Y7
	VPMADDWD Y6, Y4, Y4
	VPMADDWD Y7, Y5, Y5
	VPADDD Y4, Y3, Y3
	VPADDD Y5, Y3, Y3
	VEXTRACTI128 $1, Y3, X4
	VPADDD X4, X3, X3
	VPHADDD X2, X3, X3
	VPHADDD X3, X3, X3 // isum, msum
	VCVTDQ2PS X3, X3
	VMOVD (SI), X4
	VCVTPH2PS X4, X4 // d, dmin
	VMULPS X4, X3, X3
	VMOVSHDUP X3, X4
	VSUBSS X4, X3, X3
	VMULSS (DX), X3, X3
	VADDSS X3, X0, X0
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $16, R9
	DECQ CX
	JNZ q4blk

	MOVSS X0, (R14)
	ADDQ $4, R14
	ADDQ wstride+8(FP), R13
	DECQ R15
	JMP q4row

q4done:
	VZEROUPPER
	RET

// func dotQ5KRowsAVX2(w *byte, wstride int, nrows int, qs *int8, d *float32, s32 *int16, nb int, out *float32)
//
// out[r] = dotQ5KGo(row r of w, the Q8_K row (qs, d, s32)) for r < nrows,
// rows wstride bytes apart, nb blocks of 256 each.
TEXT ·dotQ5KRowsAVX2(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), R13
	MOVQ nrows+16(FP), R15
	MOVQ out+56(FP), R14
	VMOVDQU ·kqm0f(SB), Y15
	VMOVDQU ·kqm10(SB), Y14

q5row:
	CMPQ R15, $0
	JEQ q5done
	MOVQ R13, SI
	MOVQ qs+24(FP), DI
	MOVQ d+32(FP), DX
	MOVQ s32+40(FP), R9
	MOVQ nb+48(FP), CX
	VXORPS X0, X0, X0

q5blk:
	// The 6-bit scales and mins of the 8 sub-blocks (ggml's
	// get_scale_min_k4) as bytes [sc0..sc7, m0..m7]: the low 6 bits of
	// bytes 0-3 (sc0-3) and 4-7 (m0-3), the nibbles of bytes 8-11 (sc4-7
	// low, m4-7 high) with the top 2 bits of bytes 0-3 and 4-7 above them.
	VMOVDQU 4(SI), X1
	VPSHUFB ·kqsh1(SB), X1, X2 // q0-3 q8-11 q4-7 q8-11
	VPSHUFB ·kqsh2(SB), X1, X1 // 0 q0-3 0 q4-7
	VPSRLW $2, X1, X1
	VPAND ·kqm30(SB), X1, X1 // top 2 bits as bits 4-5
	VPSRLW $4, X2, X4
	VPAND ·kqm2(SB), X4, X4 // m4-7 low nibbles
	VPAND ·kqm1(SB), X2, X2 // sc0-3, sc4-7 low, m0-3
	VPOR X4, X2, X2
	VPOR X1, X2, X2
	VPMOVZXBW X2, X1
	VINSERTI128 $1, X1, Y1, Y1 // int16 scales, both lanes
	VPSRLDQ $8, X2, X2
	VPMOVZXBW X2, X2 // int16 mins
	VPMADDWD (R9), X2, X2 // mins times the sums of 32
	VPXOR Y3, Y3, Y3
	VMOVDQU 16(SI), Y8 // qh: bit j of byte l is weight l of sub-block j
	VMOVDQU 48(SI), Y4
	VPSRLW $4, Y4, Y5
	VPAND Y15, Y4, Y4
	VPAND Y15, Y5, Y5
	VPSLLW $4, Y8, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y4, Y4
	VPSLLW $3, Y8, Y10
	VPAND Y14, Y10, Y10
	VPOR Y10, Y5, Y5
	VPMADDUBSW 0(DI), Y4, Y4
	VPMADDUBSW 32(DI), Y5, Y5
	VPSHUFB ·kq4shuf+0(SB), Y1, Y6
	VPSHUFB ·kq4shuf+32(SB), Y1, Y7
	VPMADDWD Y6, Y4, Y4
	VPMADDWD Y7, Y5, Y5
	VPADDD Y4, Y3, Y3
	VPADDD Y5, Y3, Y3
	VMOVDQU 80(SI), Y4
	VPSRLW $4, Y4, Y5
	VPAND Y15, Y4, Y4
	VPAND Y15, Y5, Y5
	VPSLLW $2, Y8, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y4, Y4
	VPSLLW $1, Y8, Y10
	VPAND Y14, Y10, Y10
	VPOR Y10, Y5, Y5
	VPMADDUBSW 64(DI), Y4, Y4
	VPMADDUBSW 96(DI), Y5, Y5
	VPSHUFB ·kq4shuf+64(SB), Y1, Y6
	VPSHUFB ·kq4shuf+96(SB), Y1, Y7
	VPMADDWD Y6, Y4, Y4
	VPMADDWD Y7, Y5, Y5
	VPADDD Y4, Y3, Y3
	VPADDD Y5, Y3, Y3
	VMOVDQU 112(SI), Y4
	VPSRLW $4, Y4, Y5
	VPAND Y15, Y4, Y4
	VPAND Y15, Y5, Y5
	VMOVDQA Y8, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y4, Y4
	VPSRLW $1, Y8, Y10
	VPAND Y14, Y10, Y10
	VPOR Y10, Y5, Y5
	VPMADDUBSW 128(DI), Y4, Y4
	VPMADDUBSW 160(DI), Y5, Y5
	VPSHUFB ·kq4shuf+128(SB), Y1, Y6
	VPSHUFB ·kq4shuf+160(SB), Y1, Y7
	VPMADDWD Y6, Y4, Y4
	VPMADDWD Y7, Y5, Y5
	VPADDD Y4, Y3, Y3
	VPADDD Y5, Y3, Y3
	VMOVDQU 144(SI), Y4
	VPSRLW $4, Y4, Y5
	VPAND Y15, Y4, Y4
	VPAND Y15, Y5, Y5
	VPSRLW $2, Y8, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y4, Y4
	VPSRLW $3, Y8, Y10
	VPAND Y14, Y10, Y10
	VPOR Y10, Y5, Y5
	VPMADDUBSW 192(DI), Y4, Y4
	VPMADDUBSW 224(DI), Y5, Y5
	VPSHUFB ·kq4shuf+192(SB), Y1, Y6
	VPSHUFB ·kq4shuf+224(SB), Y1, Y7
	VPMADDWD Y6, Y4, Y4
	VPMADDWD Y7, Y5, Y5
	VPADDD Y4, Y3, Y3
	VPADDD Y5, Y3, Y3
	VEXTRACTI128 $1, Y3, X4
	VPADDD X4, X3, X3
	VPHADDD X2, X3, X3
	VPHADDD X3, X3, X3 // isum, msum
	VCVTDQ2PS X3, X3
	VMOVD (SI), X4
	VCVTPH2PS X4, X4 // d, dmin
	VMULPS X4, X3, X3
	VMOVSHDUP X3, X4
	VSUBSS X4, X3, X3
	VMULSS (DX), X3, X3
	VADDSS X3, X0, X0
	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $16, R9
	DECQ CX
	JNZ q5blk

	MOVSS X0, (R14)
	ADDQ $4, R14
	ADDQ wstride+8(FP), R13
	DECQ R15
	JMP q5row

q5done:
	VZEROUPPER
	RET

// func dotQ6KRowsAVX2(w *byte, wstride int, nrows int, qs *int8, d *float32, s16 *int16, nb int, out *float32)
//
// out[r] = dotQ6KGo(row r of w, the Q8_K row (qs, d, s16)) for r < nrows.
TEXT ·dotQ6KRowsAVX2(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), R13
	MOVQ nrows+16(FP), R15
	MOVQ out+56(FP), R14
	VMOVDQU ·kqm0f(SB), Y15
	VMOVDQU ·kqm30(SB), Y14

q6row:
	CMPQ R15, $0
	JEQ q6done
	MOVQ R13, SI
	MOVQ qs+24(FP), DI
	MOVQ d+32(FP), DX
	MOVQ s16+40(FP), R9
	MOVQ nb+48(FP), CX
	VXORPS X0, X0, X0

q6blk:
	VMOVDQU 192(SI), X1 // 16 int8 scales
	VPMOVSXBW X1, Y2
	VPMADDWD (R9), Y2, Y2 // scales times the sums of 16
	VPXOR Y3, Y3, Y3
	VMOVDQU 0(SI), Y4
	VMOVDQU 32(SI), Y5
	VMOVDQU 128(SI), Y7
	VPAND Y15, Y4, Y8
	VPSLLW $4, Y7, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y8, Y8
	VPMADDUBSW 0(DI), Y8, Y8
	VPSHUFB ·kq6shuf+0(SB), X1, X6
	VPMOVSXBW X6, Y6
	VPMADDWD Y6, Y8, Y8
	VPADDD Y8, Y3, Y3
	VPAND Y15, Y5, Y8
	VPSLLW $2, Y7, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y8, Y8
	VPMADDUBSW 32(DI), Y8, Y8
	VPSHUFB ·kq6shuf+16(SB), X1, X6
	VPMOVSXBW X6, Y6
	VPMADDWD Y6, Y8, Y8
	VPADDD Y8, Y3, Y3
	VPSRLW $4, Y4, Y8
	VPAND Y15, Y8, Y8
	VMOVDQA Y7, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y8, Y8
	VPMADDUBSW 64(DI), Y8, Y8
	VPSHUFB ·kq6shuf+32(SB), X1, X6
	VPMOVSXBW X6, Y6
	VPMADDWD Y6, Y8, Y8
	VPADDD Y8, Y3, Y3
	VPSRLW $4, Y5, Y8
	VPAND Y15, Y8, Y8
	VPSRLW $2, Y7, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y8, Y8
	VPMADDUBSW 96(DI), Y8, Y8
	VPSHUFB ·kq6shuf+48(SB), X1, X6
	VPMOVSXBW X6, Y6
	VPMADDWD Y6, Y8, Y8
	VPADDD Y8, Y3, Y3
	VMOVDQU 64(SI), Y4
	VMOVDQU 96(SI), Y5
	VMOVDQU 160(SI), Y7
	VPAND Y15, Y4, Y8
	VPSLLW $4, Y7, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y8, Y8
	VPMADDUBSW 128(DI), Y8, Y8
	VPSHUFB ·kq6shuf+64(SB), X1, X6
	VPMOVSXBW X6, Y6
	VPMADDWD Y6, Y8, Y8
	VPADDD Y8, Y3, Y3
	VPAND Y15, Y5, Y8
	VPSLLW $2, Y7, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y8, Y8
	VPMADDUBSW 160(DI), Y8, Y8
	VPSHUFB ·kq6shuf+80(SB), X1, X6
	VPMOVSXBW X6, Y6
	VPMADDWD Y6, Y8, Y8
	VPADDD Y8, Y3, Y3
	VPSRLW $4, Y4, Y8
	VPAND Y15, Y8, Y8
	VMOVDQA Y7, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y8, Y8
	VPMADDUBSW 192(DI), Y8, Y8
	VPSHUFB ·kq6shuf+96(SB), X1, X6
	VPMOVSXBW X6, Y6
	VPMADDWD Y6, Y8, Y8
	VPADDD Y8, Y3, Y3
	VPSRLW $4, Y5, Y8
	VPAND Y15, Y8, Y8
	VPSRLW $2, Y7, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y8, Y8
	VPMADDUBSW 224(DI), Y8, Y8
	VPSHUFB ·kq6shuf+112(SB), X1, X6
	VPMOVSXBW X6, Y6
	VPMADDWD Y6, Y8, Y8
	VPADDD Y8, Y3, Y3
	VPSLLD $5, Y2, Y2
	VPSUBD Y2, Y3, Y3 // isum - 32*csum
	VEXTRACTI128 $1, Y3, X4
	VPADDD X4, X3, X3
	VPHADDD X3, X3, X3
	VPHADDD X3, X3, X3
	VCVTDQ2PS X3, X3
	MOVWLZX 208(SI), AX
	VMOVD AX, X4
	VCVTPH2PS X4, X4
	VMULSS X4, X3, X3
	VMULSS (DX), X3, X3
	VADDSS X3, X0, X0
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, R9
	DECQ CX
	JNZ q6blk

	MOVSS X0, (R14)
	ADDQ $4, R14
	ADDQ wstride+8(FP), R13
	DECQ R15
	JMP q6row

q6done:
	VZEROUPPER
	RET
