// Native k-quant products (kquant.go): Q4_K, Q5_K and Q6_K weight rows against
// an activation row quantized to Q8_K, AVX2. Each block's integer sums are
// exact and combined in float32 in the order of dotQ4KGo/dotQ6KGo, so the
// results are theirs bit for bit (TestKQuantDotAsmMatchesGo).

#include "textflag.h"

DATA kq4shuf<>+0(SB)/8, $0x0100010001000100
DATA kq4shuf<>+8(SB)/8, $0x0100010001000100
DATA kq4shuf<>+16(SB)/8, $0x0100010001000100
DATA kq4shuf<>+24(SB)/8, $0x0100010001000100
DATA kq4shuf<>+32(SB)/8, $0x0302030203020302
DATA kq4shuf<>+40(SB)/8, $0x0302030203020302
DATA kq4shuf<>+48(SB)/8, $0x0302030203020302
DATA kq4shuf<>+56(SB)/8, $0x0302030203020302
DATA kq4shuf<>+64(SB)/8, $0x0504050405040504
DATA kq4shuf<>+72(SB)/8, $0x0504050405040504
DATA kq4shuf<>+80(SB)/8, $0x0504050405040504
DATA kq4shuf<>+88(SB)/8, $0x0504050405040504
DATA kq4shuf<>+96(SB)/8, $0x0706070607060706
DATA kq4shuf<>+104(SB)/8, $0x0706070607060706
DATA kq4shuf<>+112(SB)/8, $0x0706070607060706
DATA kq4shuf<>+120(SB)/8, $0x0706070607060706
DATA kq4shuf<>+128(SB)/8, $0x0908090809080908
DATA kq4shuf<>+136(SB)/8, $0x0908090809080908
DATA kq4shuf<>+144(SB)/8, $0x0908090809080908
DATA kq4shuf<>+152(SB)/8, $0x0908090809080908
DATA kq4shuf<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA kq4shuf<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA kq4shuf<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA kq4shuf<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA kq4shuf<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA kq4shuf<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA kq4shuf<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA kq4shuf<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA kq4shuf<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA kq4shuf<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA kq4shuf<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA kq4shuf<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL kq4shuf<>(SB), RODATA|NOPTR, $256
DATA kq6shuf<>+0(SB)/8, $0x0000000000000000
DATA kq6shuf<>+8(SB)/8, $0x0101010101010101
DATA kq6shuf<>+16(SB)/8, $0x0202020202020202
DATA kq6shuf<>+24(SB)/8, $0x0303030303030303
DATA kq6shuf<>+32(SB)/8, $0x0404040404040404
DATA kq6shuf<>+40(SB)/8, $0x0505050505050505
DATA kq6shuf<>+48(SB)/8, $0x0606060606060606
DATA kq6shuf<>+56(SB)/8, $0x0707070707070707
DATA kq6shuf<>+64(SB)/8, $0x0808080808080808
DATA kq6shuf<>+72(SB)/8, $0x0909090909090909
DATA kq6shuf<>+80(SB)/8, $0x0a0a0a0a0a0a0a0a
DATA kq6shuf<>+88(SB)/8, $0x0b0b0b0b0b0b0b0b
DATA kq6shuf<>+96(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA kq6shuf<>+104(SB)/8, $0x0d0d0d0d0d0d0d0d
DATA kq6shuf<>+112(SB)/8, $0x0e0e0e0e0e0e0e0e
DATA kq6shuf<>+120(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL kq6shuf<>(SB), RODATA|NOPTR, $128
DATA kqm0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kqm0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kqm0f<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA kqm0f<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL kqm0f<>(SB), RODATA|NOPTR, $32
DATA kqm30<>+0(SB)/8, $0x3030303030303030
DATA kqm30<>+8(SB)/8, $0x3030303030303030
DATA kqm30<>+16(SB)/8, $0x3030303030303030
DATA kqm30<>+24(SB)/8, $0x3030303030303030
GLOBL kqm30<>(SB), RODATA|NOPTR, $32
DATA kqm10<>+0(SB)/8, $0x1010101010101010
DATA kqm10<>+8(SB)/8, $0x1010101010101010
DATA kqm10<>+16(SB)/8, $0x1010101010101010
DATA kqm10<>+24(SB)/8, $0x1010101010101010
GLOBL kqm10<>(SB), RODATA|NOPTR, $32
DATA kqsh1<>+0(SB)/8, $0x0b0a090803020100
DATA kqsh1<>+8(SB)/8, $0x0b0a090807060504
GLOBL kqsh1<>(SB), RODATA|NOPTR, $16
DATA kqsh2<>+0(SB)/8, $0x0302010080808080
DATA kqsh2<>+8(SB)/8, $0x0706050480808080
GLOBL kqsh2<>(SB), RODATA|NOPTR, $16
DATA kqm1<>+0(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA kqm1<>+8(SB)/8, $0x000000003f3f3f3f
GLOBL kqm1<>(SB), RODATA|NOPTR, $16
DATA kqm2<>+0(SB)/8, $0x0000000000000000
DATA kqm2<>+8(SB)/8, $0x0f0f0f0f00000000
GLOBL kqm2<>(SB), RODATA|NOPTR, $16

// func dotQ4KRowsAVX2(w *byte, wstride int, nrows int, qs *int8, d *float32, s32 *int16, nb int, out *float32)
//
// out[r] = dotQ4KGo(row r of w, the Q8_K row (qs, d, s32)) for r < nrows,
// rows wstride bytes apart, nb blocks of 256 each.
TEXT ·dotQ4KRowsAVX2(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), R13
	MOVQ nrows+16(FP), R15
	MOVQ out+56(FP), R14
	VMOVDQU kqm0f<>(SB), Y15

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
	VPSHUFB kqsh1<>(SB), X1, X2 // q0-3 q8-11 q4-7 q8-11
	VPSHUFB kqsh2<>(SB), X1, X1 // 0 q0-3 0 q4-7
	VPSRLW $2, X1, X1
	VPAND kqm30<>(SB), X1, X1 // top 2 bits as bits 4-5
	VPSRLW $4, X2, X4
	VPAND kqm2<>(SB), X4, X4 // m4-7 low nibbles
	VPAND kqm1<>(SB), X2, X2 // sc0-3, sc4-7 low, m0-3
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
	VPSHUFB kq4shuf<>+0(SB), Y1, Y6
	VPSHUFB kq4shuf<>+32(SB), Y1, Y7
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
	VPSHUFB kq4shuf<>+64(SB), Y1, Y6
	VPSHUFB kq4shuf<>+96(SB), Y1, Y7
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
	VPSHUFB kq4shuf<>+128(SB), Y1, Y6
	VPSHUFB kq4shuf<>+160(SB), Y1, Y7
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
	VPSHUFB kq4shuf<>+192(SB), Y1, Y6
	VPSHUFB kq4shuf<>+224(SB), Y1, Y7
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
	VMOVDQU kqm0f<>(SB), Y15
	VMOVDQU kqm10<>(SB), Y14

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
	VPSHUFB kqsh1<>(SB), X1, X2 // q0-3 q8-11 q4-7 q8-11
	VPSHUFB kqsh2<>(SB), X1, X1 // 0 q0-3 0 q4-7
	VPSRLW $2, X1, X1
	VPAND kqm30<>(SB), X1, X1 // top 2 bits as bits 4-5
	VPSRLW $4, X2, X4
	VPAND kqm2<>(SB), X4, X4 // m4-7 low nibbles
	VPAND kqm1<>(SB), X2, X2 // sc0-3, sc4-7 low, m0-3
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
	VPSHUFB kq4shuf<>+0(SB), Y1, Y6
	VPSHUFB kq4shuf<>+32(SB), Y1, Y7
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
	VPSHUFB kq4shuf<>+64(SB), Y1, Y6
	VPSHUFB kq4shuf<>+96(SB), Y1, Y7
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
	VPSHUFB kq4shuf<>+128(SB), Y1, Y6
	VPSHUFB kq4shuf<>+160(SB), Y1, Y7
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
	VPSHUFB kq4shuf<>+192(SB), Y1, Y6
	VPSHUFB kq4shuf<>+224(SB), Y1, Y7
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
	VMOVDQU kqm0f<>(SB), Y15
	VMOVDQU kqm30<>(SB), Y14

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
	VPSHUFB kq6shuf<>+0(SB), X1, X6
	VPMOVSXBW X6, Y6
	VPMADDWD Y6, Y8, Y8
	VPADDD Y8, Y3, Y3
	VPAND Y15, Y5, Y8
	VPSLLW $2, Y7, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y8, Y8
	VPMADDUBSW 32(DI), Y8, Y8
	VPSHUFB kq6shuf<>+16(SB), X1, X6
	VPMOVSXBW X6, Y6
	VPMADDWD Y6, Y8, Y8
	VPADDD Y8, Y3, Y3
	VPSRLW $4, Y4, Y8
	VPAND Y15, Y8, Y8
	VMOVDQA Y7, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y8, Y8
	VPMADDUBSW 64(DI), Y8, Y8
	VPSHUFB kq6shuf<>+32(SB), X1, X6
	VPMOVSXBW X6, Y6
	VPMADDWD Y6, Y8, Y8
	VPADDD Y8, Y3, Y3
	VPSRLW $4, Y5, Y8
	VPAND Y15, Y8, Y8
	VPSRLW $2, Y7, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y8, Y8
	VPMADDUBSW 96(DI), Y8, Y8
	VPSHUFB kq6shuf<>+48(SB), X1, X6
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
	VPSHUFB kq6shuf<>+64(SB), X1, X6
	VPMOVSXBW X6, Y6
	VPMADDWD Y6, Y8, Y8
	VPADDD Y8, Y3, Y3
	VPAND Y15, Y5, Y8
	VPSLLW $2, Y7, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y8, Y8
	VPMADDUBSW 160(DI), Y8, Y8
	VPSHUFB kq6shuf<>+80(SB), X1, X6
	VPMOVSXBW X6, Y6
	VPMADDWD Y6, Y8, Y8
	VPADDD Y8, Y3, Y3
	VPSRLW $4, Y4, Y8
	VPAND Y15, Y8, Y8
	VMOVDQA Y7, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y8, Y8
	VPMADDUBSW 192(DI), Y8, Y8
	VPSHUFB kq6shuf<>+96(SB), X1, X6
	VPMOVSXBW X6, Y6
	VPMADDWD Y6, Y8, Y8
	VPADDD Y8, Y3, Y3
	VPSRLW $4, Y5, Y8
	VPAND Y15, Y8, Y8
	VPSRLW $2, Y7, Y9
	VPAND Y14, Y9, Y9
	VPOR Y9, Y8, Y8
	VPMADDUBSW 224(DI), Y8, Y8
	VPSHUFB kq6shuf<>+112(SB), X1, X6
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

// Constants of quantizeRowQ8KAVX2 (those of quantizeRowQ8AVX2).
DATA kq8qc<>+0(SB)/4, $0x7fffffff // abs mask
DATA kq8qc<>+4(SB)/4, $0x42fe0000 // 127.0
DATA kq8qc<>+8(SB)/4, $0x3f800000 // 1.0
DATA kq8qc<>+12(SB)/4, $0
DATA kq8qc<>+16(SB)/4, $0 // VPERMD order after the packs
DATA kq8qc<>+20(SB)/4, $4
DATA kq8qc<>+24(SB)/4, $1
DATA kq8qc<>+28(SB)/4, $5
DATA kq8qc<>+32(SB)/4, $2
DATA kq8qc<>+36(SB)/4, $6
DATA kq8qc<>+40(SB)/4, $3
DATA kq8qc<>+44(SB)/4, $7
GLOBL kq8qc<>(SB), RODATA|NOPTR, $48

// func quantizeRowQ8KAVX2(q *int8, d *float32, x *float32, nb int)
//
// The int8s and scales of quantizeRowQ8K (not the sums) for nb blocks of
// 256: d = max|x|/127, q = x/d rounded half to even (VCVTPS2DQ), as
// quantizeRowQ8AVX2 does per 32.
TEXT ·quantizeRowQ8KAVX2(SB), NOSPLIT, $0-32
	MOVQ q+0(FP), DI
	MOVQ d+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ nb+24(FP), CX
	VBROADCASTSS kq8qc<>+0(SB), Y15
	VMOVDQU kq8qc<>+16(SB), Y14
	VXORPS X13, X13, X13

kqblock:
	VXORPS Y4, Y4, Y4
	MOVQ SI, R8
	MOVQ $8, R9

kqmax:
	VANDPS (R8), Y15, Y0
	VANDPS 32(R8), Y15, Y1
	VANDPS 64(R8), Y15, Y2
	VANDPS 96(R8), Y15, Y3
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VMAXPS Y0, Y4, Y4
	ADDQ $128, R8
	DECQ R9
	JNE kqmax
	VEXTRACTF128 $1, Y4, X5
	VMAXPS X5, X4, X4
	VPERMILPS $0x4E, X4, X5
	VMAXPS X5, X4, X4
	VPERMILPS $0xB1, X4, X5
	VMAXPS X5, X4, X4 // amax in every lane
	VDIVSS kq8qc<>+4(SB), X4, X4 // s = amax / 127
	VMOVSS X4, (DX)
	VXORPS X5, X5, X5
	VUCOMISS X13, X4
	JEQ kqzero
	VMOVSS kq8qc<>+8(SB), X5
	VDIVSS X4, X5, X5 // id = 1 / s

kqzero:
	VBROADCASTSS X5, Y5
	MOVQ $8, R9

kqquant:
	VMULPS (SI), Y5, Y0
	VMULPS 32(SI), Y5, Y1
	VMULPS 64(SI), Y5, Y2
	VMULPS 96(SI), Y5, Y3
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
	DECQ R9
	JNE kqquant

	ADDQ $4, DX
	DECQ CX
	JNE kqblock
	VZEROUPPER
	RET
