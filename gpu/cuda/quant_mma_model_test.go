package cuda

import (
	"math/rand/v2"
	"testing"

	"rigscope/engine/tensor"
)

// A Go model of kernels/quant_mma.cu's mqm_body (plain product): which
// bytes each lane loads, how they fill mma.sync m16n8k32's A and B
// fragments (PTX ISA: a0/a2 row g, a1/a3 row g+8, k 4j.. and 16+4j..; b0,
// b1 column g, the same k; c0, c1 row g, columns 2j, 2j+1; c2, c3 row
// g+8), which scale and min each sub-block takes, and the C fragment's
// combination, against the CPU's DequantRow on random Q4_K blocks,
// without a GPU. It mirrors the CUDA code line for line: change both
// together. (On the device, cuda-check -checks quant -parts mma compares
// the kernels themselves with float64.)
func TestMQMModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const K, rows, T = 4352, 21, 11 // 17 super-blocks over 4 warps; a partial second tile of rows; two token tiles
	rb, _ := tensor.Q4_K.Bytes(K)
	data := modelBlocks(rng, tensor.Q4_K, rows, K, 0, 2)
	m := qmem{buf: data, base: 1 << 20}
	xq := make([]int8, T*K) // qx's int8 (T, K), dx per 32-block, the float2 per 16-group {dx, dx * sum}
	for i := range xq {
		xq[i] = int8(rng.IntN(255) - 127)
	}
	dx := make([]float64, T*K/32)
	for i := range dx {
		dx[i] = 0.5 + rng.Float64()
	}
	xm := func(t, g int) [2]float64 {
		sum := 0
		for _, v := range xq[t*K+16*g : t*K+16*g+16] {
			sum += int(v)
		}
		d := dx[t*K/32+g/2]
		return [2]float64{d, d * float64(sum)}
	}
	word := func(b []int8) uint32 {
		return uint32(uint8(b[0])) | uint32(uint8(b[1]))<<8 | uint32(uint8(b[2]))<<16 | uint32(uint8(b[3]))<<24
	}
	for row0 := 0; row0 < rows; row0 += 16 { // a block
		var acc [4][16][16]float64 // [warp][row][token]
		for w := 0; w < 4; w++ {
			for sb := w; sb < K/256; sb += 4 {
				hd, q, _ := q4kLaneLoads(t, m, tensor.Q4_K, rb, rows, row0, sb)
				for p := 0; p < 4; p++ {
					for h := 0; h < 2; h++ {
						b, s := sb*8+2*p+h, uint(4*h)
						for n := 0; 8*n < T; n++ {
							var A [16][32]int
							var B [32][8]int
							for lane := 0; lane < 32; lane++ {
								g, j := lane>>2, lane&3
								var xv [2]uint32
								if t0 := 8*n + g; t0 < T {
									o := t0*K + 32*b + 8*j
									xv = [2]uint32{word(xq[o:]), word(xq[o+4:])}
								}
								regs := [4]uint32{(q[lane][0][p][0] >> s) & 0x0f0f0f0f, (q[lane][1][p][0] >> s) & 0x0f0f0f0f,
									(q[lane][0][p][1] >> s) & 0x0f0f0f0f, (q[lane][1][p][1] >> s) & 0x0f0f0f0f}
								for i := 0; i < 4; i++ {
									A[g][4*j+i] = int(uint8(regs[0] >> (8 * i)))
									A[g+8][4*j+i] = int(uint8(regs[1] >> (8 * i)))
									A[g][16+4*j+i] = int(uint8(regs[2] >> (8 * i)))
									A[g+8][16+4*j+i] = int(uint8(regs[3] >> (8 * i)))
									B[4*j+i][g] = int(int8(uint8(xv[0] >> (8 * i))))
									B[16+4*j+i][g] = int(int8(uint8(xv[1] >> (8 * i))))
								}
							}
							var C [16][8]int
							for r := range C {
								for c := range C[r] {
									for k := 0; k < 32; k++ {
										C[r][c] += A[r][k] * B[k][c]
									}
								}
							}
							for lane := 0; lane < 32; lane++ {
								g, j := lane>>2, lane&3
								c := [4]int{C[g][2*j], C[g][2*j+1], C[g+8][2*j], C[g+8][2*j+1]}
								for tt := 0; tt < 2; tt++ {
									tk := 8*n + 2*j + tt
									if tk >= T {
										continue
									}
									m0, m1 := xm(tk, 2*b), xm(tk, 2*b+1)
									for r := 0; r < 2; r++ {
										d, dmin := f16At(hd[lane][r][0]), f16At(hd[lane][r][0]>>16)
										sc0, sc1, mn0, mn1 := qscaleMinPair(p, hd[lane][r][1], hd[lane][r][2], hd[lane][r][3])
										sc, mn := sc0, mn0
										if h == 1 {
											sc, mn = sc1, mn1
										}
										acc[w][g+8*r][tk] += float64(c[2*r+tt])*float64(d*sc)*m0[0] - float64(dmin*mn)*(m0[1]+m1[1])
									}
								}
							}
						}
					}
				}
			}
		}
		checkModelRows(t, "", tensor.Q4_K, data, rows, K, T, row0, 1e-6, 1e-12,
			func(tk, k int) float64 { return dx[tk*K/32+k/32] * float64(xq[tk*K+k]) },
			func(r, tk int) float64 {
				var v float64
				for w := range acc {
					v += acc[w][r][tk]
				}
				return v
			})
	}
}
