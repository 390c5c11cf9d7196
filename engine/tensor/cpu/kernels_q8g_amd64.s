// The prefill Q8_0 kernel for AVX512-VNNI CPUs on four-token groups laid out
// by groupQ8 (matmul_group.go). It computes every (row, token) product with
// the same integer block sums, the same scale products and the same
// accumulate and reduce order as dotQ8Q8x4RowsAVX2, so the results are
// bit-identical to it (and to the one-row decode kernel), but needs no sign
// fix-up per pair: VPDPBUSD takes the weight bytes offset to unsigned
// (w+128) and the activations as they are, and each lane starts from
// -128 * (its four activations), which cancels the offset exactly.

#include "textflag.h"
#include "kernels_amd64.h"

DATA q8gc<>+0(SB)/8, $0x8080808080808080
DATA q8gc<>+8(SB)/8, $0x8080808080808080
DATA q8gc<>+16(SB)/8, $0x8080808080808080
DATA q8gc<>+24(SB)/8, $0x8080808080808080
GLOBL q8gc<>(SB), RODATA|NOPTR, $32

// GSCALE4 converts the four tokens' int32 block sums (Y8, Y11, Y12, Y13)
// to float32 and adds them, times the token's scale (lane k of Y9), into
// the token's accumulator (Y0-Y3). Clobbers Y5.
#define GSCALE4 \
	VCVTDQ2PS Y8, Y8; \
	VPERMILPS $0x00, Y9, Y5; \
	VFMADD231PS Y8, Y5, Y0; \
	VCVTDQ2PS Y11, Y11; \
	VPERMILPS $0x55, Y9, Y5; \
	VFMADD231PS Y11, Y5, Y1; \
	VCVTDQ2PS Y12, Y12; \
	VPERMILPS $0xAA, Y9, Y5; \
	VFMADD231PS Y12, Y5, Y2; \
	VCVTDQ2PS Y13, Y13; \
	VPERMILPS $0xFF, Y9, Y5; \
	VFMADD231PS Y13, Y5, Y3

// GSTORE4 reduces the four tokens' accumulators (Y0-Y3, VHADDPS of the
// four, then low + high half) and stores them at BX, BX+R9, BX+2*R9,
// BX+3*R9. Clobbers X1, AX.
#define GSTORE4 \
	VHADDPS Y1, Y0, Y0; \
	VHADDPS Y3, Y2, Y2; \
	VHADDPS Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, X0; \
	VMOVSS X0, (BX); \
	VEXTRACTPS $1, X0, (BX)(R9*1); \
	VEXTRACTPS $2, X0, (BX)(R9*2); \
	LEAQ (BX)(R9*2), AX; \
	VEXTRACTPS $3, X0, (AX)(R9*1)

// func dotQ8Q8x4RowsVNNIG(w *byte, wstride int, nrows int, xq *int8, xc *int32, dx *float32, nb int, tbl *float32, out *float32, ostride int)
//
// out[r + k*ostride/4] = dotQ8Q8(row r, token k) for r < nrows, k < 4.
// Per block b: xq+128b holds the four tokens' 32 int8 (4x32 bytes), xc+128b
// their lane corrections (4x8 int32), dx+16b their scales (4 float32).
TEXT ·dotQ8Q8x4RowsVNNIG(SB), NOSPLIT, $0-80
	MOVQ w+0(FP), R13
	MOVQ wstride+8(FP), R14
	MOVQ nrows+16(FP), R15
	MOVQ tbl+56(FP), R8
	MOVQ out+64(FP), BX
	MOVQ ostride+72(FP), R9
	VMOVDQU q8gc<>+0(SB), Y10

grow:
	CMPQ R15, $0
	JEQ gdone
	MOVQ R13, SI
	MOVQ xq+24(FP), DI
	MOVQ xc+32(FP), R12
	MOVQ dx+40(FP), DX
	MOVQ nb+48(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

gblk:
	VMOVDQU 2(SI), Y4
	VPXOR Y10, Y4, Y4 // w + 128 as uint8
	MOVWLZX (SI), AX
	VBROADCASTSS (R8)(AX*4), Y6 // f16(w.d)
	VBROADCASTF128 (DX), Y9
	VMULPS Y9, Y6, Y9 // [d0 d1 d2 d3 | d0 d1 d2 d3] = f16(w.d) * dx[k]

	VMOVDQU (R12), Y8
	VPDPBUSD (DI), Y4, Y8
	VMOVDQU 32(R12), Y11
	VPDPBUSD 32(DI), Y4, Y11
	VMOVDQU 64(R12), Y12
	VPDPBUSD 64(DI), Y4, Y12
	VMOVDQU 96(R12), Y13
	VPDPBUSD 96(DI), Y4, Y13

	GSCALE4

	ADDQ $34, SI
	SUBQ $-128, DI
	SUBQ $-128, R12
	ADDQ $16, DX
	DECQ CX
	JNE gblk

	GSTORE4
	ADDQ $4, BX
	ADDQ R14, R13
	DECQ R15
	JMP grow

gdone:
	VZEROUPPER
	RET

// ROWBLK accumulates the block at wq (scale at wd) of a weight row into
// acc: the weights offset to unsigned in Y4, VPDPBUSD from the block's lane
// corrections (Y8) against its activations (Y7), the int sums scaled by
// f16(w.d) * dx (Y11 = dx broadcast; the same float32 product in every
// lane as dotQ8Q8AVX2's scalar one).
#define ROWBLK(wq, wd, acc) \
	VMOVDQU wq, Y4; \
	VPXOR Y10, Y4, Y4; \
	VMOVDQA Y8, Y5; \
	VPDPBUSD Y7, Y4, Y5; \
	VCVTDQ2PS Y5, Y5; \
	MOVWLZX wd, AX; \
	VBROADCASTSS (R8)(AX*4), Y6; \
	VMULPS Y11, Y6, Y6; \
	VFMADD231PS Y5, Y6, acc

// Q8PREFETCH asks for the weight bytes Q8PF ahead of each of the four
// streams into L2 (SI, R11, SI+2*R14, R11+2*R14 in the decode kernels). A
// decode step streams every weight from DRAM once; where one core keeps
// few misses in flight (a 2-CPU slice of an Intel Xeon with AMX: about
// 11 GB/s per core from DRAM without it) the hardware prefetchers alone
// leave bandwidth unused. There, an L2 prefetch 1 KiB (about 30 blocks)
// ahead took BenchmarkMatMulDecodeQ8-style streaming from 11 to 13.5 GB/s
// on one thread and 22 to 24 GB/s on two (256-1024 bytes, T0/T1/NTA tried;
// NTA lost), and llama-1b Q8_0 decode by 20-26%; on an AMD EPYC (Zen 4) it
// is neutral. Two prefetches per cache line: the extra uops are free in a
// memory-bound loop, and a prefetch past the end of w never faults.
#define Q8PF 1024
#define Q8PREFETCH \
	PREFETCHT1 Q8PF(SI); \
	PREFETCHT1 Q8PF(R11); \
	PREFETCHT1 Q8PF(SI)(R14*2); \
	PREFETCHT1 Q8PF(R11)(R14*2)

// STORE4 reduces the four accumulators Y0-Y3 (HSUM8 each) into
// out[0], out[R10], out[2*R10], out[3*R10] with out at BX (clobbers Y9,
// Y12, Y13, AX).
#define STORE4 \
	VMOVAPS Y1, Y12; \
	VMOVAPS Y2, Y13; \
	VMOVAPS Y3, Y9; \
	HSUM8; \
	VMOVSS X0, (BX); \
	VMOVAPS Y12, Y0; \
	HSUM8; \
	VMOVSS X0, (BX)(R10*1); \
	VMOVAPS Y13, Y0; \
	HSUM8; \
	VMOVSS X0, (BX)(R10*2); \
	VMOVAPS Y9, Y0; \
	HSUM8; \
	LEAQ (BX)(R10*2), AX; \
	VMOVSS X0, (AX)(R10*1)

// func dotQ8Q8Rows4VNNI(w *byte, wstride int, nrows int, qx *int8, xc *int32, dx *float32, nb int, tbl *float32, out *float32, spacing int)
//
// Four streams of nrows rows each (> 0), stream k starting spacing*k bytes
// into w, rows wstride bytes apart: out[k*nrows + r] = dotQ8Q8(row r of
// stream k, qx, dx). A row of each stream at a time gives four independent
// accumulator chains, while each stream still reads its rows in order (the
// hardware prefetchers follow four long streams; four adjacent rows they do
// not). xc (nb, 8) holds qx's lane corrections. Each row's accumulation and
// reduction are dotQ8Q8AVX2's.
TEXT ·dotQ8Q8Rows4VNNI(SB), NOSPLIT, $0-80
	MOVQ w+0(FP), R13
	MOVQ wstride+8(FP), R9
	MOVQ nrows+16(FP), R15
	MOVQ R15, R10
	SHLQ $2, R10 // output stream stride in bytes
	MOVQ tbl+56(FP), R8
	MOVQ out+64(FP), BX
	MOVQ spacing+72(FP), R14
	VMOVDQU q8gc<>+0(SB), Y10

r4row:
	MOVQ R13, SI
	LEAQ (R13)(R14*1), R11
	MOVQ qx+24(FP), DI
	MOVQ xc+32(FP), R12
	MOVQ dx+40(FP), DX
	MOVQ nb+48(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

r4blk:
	VMOVDQU (DI), Y7
	VMOVDQU (R12), Y8
	VBROADCASTSS (DX), Y11
	Q8PREFETCH
	ROWBLK(2(SI), (SI), Y0)
	ROWBLK(2(R11), (R11), Y1)
	ROWBLK(2(SI)(R14*2), (SI)(R14*2), Y2)
	ROWBLK(2(R11)(R14*2), (R11)(R14*2), Y3)
	ADDQ $34, SI
	ADDQ $34, R11
	ADDQ $32, DI
	ADDQ $32, R12
	ADDQ $4, DX
	DECQ CX
	JNE r4blk

	STORE4
	ADDQ $4, BX
	ADDQ R9, R13
	DECQ R15
	JNE r4row

	VZEROUPPER
	RET

// ROWBLK2 is ROWBLK for AVX2 CPUs without VNNI: the block sums as
// dotQ8Q8AVX2 forms them (|w| times x signed by w, VPMADDUBSW, VPMADDWD
// with the int16 ones in Y10).
#define ROWBLK2(wq, wd, acc) \
	VMOVDQU wq, Y4; \
	VPSIGNB Y4, Y7, Y5; \
	VPSIGNB Y4, Y4, Y4; \
	VPMADDUBSW Y5, Y4, Y5; \
	VPMADDWD Y10, Y5, Y5; \
	VCVTDQ2PS Y5, Y5; \
	MOVWLZX wd, AX; \
	VBROADCASTSS (R8)(AX*4), Y6; \
	VMULPS Y11, Y6, Y6; \
	VFMADD231PS Y5, Y6, acc

// func dotQ8Q8Rows4AVX2(w *byte, wstride int, nrows int, qx *int8, xc *int32, dx *float32, nb int, tbl *float32, out *float32, spacing int)
//
// dotQ8Q8Rows4VNNI for AVX2 CPUs (xc unused).
TEXT ·dotQ8Q8Rows4AVX2(SB), NOSPLIT, $0-80
	MOVQ w+0(FP), R13
	MOVQ wstride+8(FP), R9
	MOVQ nrows+16(FP), R15
	MOVQ R15, R10
	SHLQ $2, R10 // output stream stride in bytes
	MOVQ tbl+56(FP), R8
	MOVQ out+64(FP), BX
	MOVQ spacing+72(FP), R14
	VPCMPEQW Y10, Y10, Y10
	VPSRLW $15, Y10, Y10 // int16 ones

a4row:
	MOVQ R13, SI
	LEAQ (R13)(R14*1), R11
	MOVQ qx+24(FP), DI
	MOVQ xc+32(FP), R12
	MOVQ dx+40(FP), DX
	MOVQ nb+48(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

a4blk:
	VMOVDQU (DI), Y7
	VBROADCASTSS (DX), Y11
	Q8PREFETCH
	ROWBLK2(2(SI), (SI), Y0)
	ROWBLK2(2(R11), (R11), Y1)
	ROWBLK2(2(SI)(R14*2), (SI)(R14*2), Y2)
	ROWBLK2(2(R11)(R14*2), (R11)(R14*2), Y3)
	ADDQ $34, SI
	ADDQ $34, R11
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNE a4blk

	STORE4
	ADDQ $4, BX
	ADDQ R9, R13
	DECQ R15
	JNE a4row

	VZEROUPPER
	RET

// func dotQ8Q8x4RowsAVX2G(w *byte, wstride int, nrows int, xq *int8, xc *int32, dx *float32, nb int, tbl *float32, out *float32, ostride int)
//
// dotQ8Q8x4RowsVNNIG for AVX2 CPUs (xc unused): the block sums as
// dotQ8Q8AVX2 forms them, |w| times x signed by w.
TEXT ·dotQ8Q8x4RowsAVX2G(SB), NOSPLIT, $0-80
	MOVQ w+0(FP), R13
	MOVQ wstride+8(FP), R14
	MOVQ nrows+16(FP), R15
	MOVQ tbl+56(FP), R8
	MOVQ out+64(FP), BX
	MOVQ ostride+72(FP), R9
	VPCMPEQW Y10, Y10, Y10
	VPSRLW $15, Y10, Y10 // int16 ones

agrow:
	CMPQ R15, $0
	JEQ agdone
	MOVQ R13, SI
	MOVQ xq+24(FP), DI
	MOVQ xc+32(FP), R12
	MOVQ dx+40(FP), DX
	MOVQ nb+48(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

agblk:
	VMOVDQU 2(SI), Y4
	VPSIGNB Y4, Y4, Y7 // |w|
	MOVWLZX (SI), AX
	VBROADCASTSS (R8)(AX*4), Y6 // f16(w.d)
	VBROADCASTF128 (DX), Y9
	VMULPS Y9, Y6, Y9 // [d0 d1 d2 d3 | d0 d1 d2 d3] = f16(w.d) * dx[k]

	VMOVDQU (DI), Y8
	VPSIGNB Y4, Y8, Y8
	VPMADDUBSW Y8, Y7, Y8
	VPMADDWD Y10, Y8, Y8
	VMOVDQU 32(DI), Y11
	VPSIGNB Y4, Y11, Y11
	VPMADDUBSW Y11, Y7, Y11
	VPMADDWD Y10, Y11, Y11
	VMOVDQU 64(DI), Y12
	VPSIGNB Y4, Y12, Y12
	VPMADDUBSW Y12, Y7, Y12
	VPMADDWD Y10, Y12, Y12
	VMOVDQU 96(DI), Y13
	VPSIGNB Y4, Y13, Y13
	VPMADDUBSW Y13, Y7, Y13
	VPMADDWD Y10, Y13, Y13

	GSCALE4

	ADDQ $34, SI
	SUBQ $-128, DI
	ADDQ $16, DX
	DECQ CX
	JNE agblk

	GSTORE4
	ADDQ $4, BX
	ADDQ R14, R13
	DECQ R15
	JMP agrow

agdone:
	VZEROUPPER
	RET

// func dotQ8Q8x4RowsVNNIZ(w *byte, wstride int, npairs int, xq *int8, xc *int32, dx *float32, nb int, tbl *float32, out *float32, ostride int)
//
// dotQ8Q8x4RowsVNNIG two rows at a time (2npairs rows) in 512-bit
// registers: the low half of Zk works on row 2p and token k, the high half
// on row 2p+1. Every lane does the same integer sums, the same float32
// scale product f16(w.d)*dx[k] and the same fused multiply-add as in the
// 256-bit kernel, and each half is reduced in its order, so the results are
// bit-identical.
TEXT ·dotQ8Q8x4RowsVNNIZ(SB), NOSPLIT, $0-80
	MOVQ w+0(FP), R13
	MOVQ wstride+8(FP), R14
	MOVQ npairs+16(FP), R15
	MOVQ tbl+56(FP), R8
	MOVQ out+64(FP), BX
	MOVQ ostride+72(FP), R9
	VBROADCASTI64X4 q8gc<>+0(SB), Z10

zrow:
	CMPQ R15, $0
	JEQ zdone
	MOVQ R13, SI
	LEAQ (R13)(R14*1), R11
	MOVQ xq+24(FP), DI
	MOVQ xc+32(FP), R12
	MOVQ dx+40(FP), DX
	MOVQ nb+48(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

zblk:
	VMOVDQU 2(SI), Y4
	VINSERTI64X4 $1, 2(R11), Z4, Z4
	VPXORD Z10, Z4, Z4 // w + 128 as uint8, rows 2p | 2p+1
	MOVWLZX (SI), AX
	MOVWLZX (R11), R10
	VBROADCASTSS (R8)(AX*4), Y6
	VBROADCASTSS (R8)(R10*4), Y7
	VINSERTF64X4 $1, Y7, Z6, Z6 // each half: that row's f16(w.d)
	VBROADCASTI64X4 0(R12), Z8
	VBROADCASTI64X4 0(DI), Z11
	VPDPBUSD Z11, Z4, Z8
	VCVTDQ2PS Z8, Z8
	VMULPS.BCST 0(DX), Z6, Z5 // f16(w.d) * dx[k], k = 0
	VFMADD231PS Z8, Z5, Z0
	VBROADCASTI64X4 32(R12), Z8
	VBROADCASTI64X4 32(DI), Z11
	VPDPBUSD Z11, Z4, Z8
	VCVTDQ2PS Z8, Z8
	VMULPS.BCST 4(DX), Z6, Z5
	VFMADD231PS Z8, Z5, Z1
	VBROADCASTI64X4 64(R12), Z8
	VBROADCASTI64X4 64(DI), Z11
	VPDPBUSD Z11, Z4, Z8
	VCVTDQ2PS Z8, Z8
	VMULPS.BCST 8(DX), Z6, Z5
	VFMADD231PS Z8, Z5, Z2
	VBROADCASTI64X4 96(R12), Z8
	VBROADCASTI64X4 96(DI), Z11
	VPDPBUSD Z11, Z4, Z8
	VCVTDQ2PS Z8, Z8
	VMULPS.BCST 12(DX), Z6, Z5
	VFMADD231PS Z8, Z5, Z3
	ADDQ $34, SI
	ADDQ $34, R11
	SUBQ $-128, DI
	SUBQ $-128, R12
	ADDQ $16, DX
	DECQ CX
	JNE zblk

	VEXTRACTF64X4 $1, Z0, Y12
	VEXTRACTF64X4 $1, Z1, Y13
	VEXTRACTF64X4 $1, Z2, Y14
	VEXTRACTF64X4 $1, Z3, Y15
	GSTORE4
	VHADDPS Y13, Y12, Y12
	VHADDPS Y15, Y14, Y14
	VHADDPS Y14, Y12, Y12
	VEXTRACTF128 $1, Y12, X13
	VADDPS X13, X12, X12
	VMOVSS X12, 4(BX)
	VEXTRACTPS $1, X12, 4(BX)(R9*1)
	VEXTRACTPS $2, X12, 4(BX)(R9*2)
	VEXTRACTPS $3, X12, 4(AX)(R9*1)
	ADDQ $8, BX
	LEAQ (R13)(R14*2), R13
	DECQ R15
	JMP zrow

zdone:
	VZEROUPPER
	RET
