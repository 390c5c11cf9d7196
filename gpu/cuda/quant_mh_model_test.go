package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// A Go model of kernels/quant_mh.cu's fp16 tensor-core Q4_K product
// (mh_x's stored x, MhQ4K's loads, the nibble pairs nib_f16 makes, the
// fp16 scales, and mma.sync m16n8k16's fragments: PTX ISA a0 row g, k 2j
// and 2j+1 (low half first), a1 row g+8, a2 and a3 the same at k 2j+8 and
// 2j+9; b0 column g at k 2j, 2j+1, b1 at 2j+8, 2j+9; c0, c1 row g,
// columns 2j, 2j+1; c2, c3 row g+8), in exact arithmetic, against the
// CPU's DequantRow on random Q4_K blocks, without a GPU: it checks which
// weight meets which x, not fp16's rounding (cuda-check -checks quant
// -parts mh runs the kernels against float64 on the device). Both forms:
// high nibbles shifted down (mhq_q4k_w*) and taken as 16q against x/16
// (hi16: mhq_q4k_w*e); and Q5_K (mhq_q5k_w*), the shifted form with each
// nibble's fifth bit from qh. It mirrors the CUDA code line for line:
// change both together.
func TestMHModel(t *testing.T) {
	for _, hi16 := range []bool{false, true} {
		mhModel(t, tensor.Q4_K, hi16)
	}
	mhModel(t, tensor.Q5_K, false)
}

// mhAt is where mh_x stores element k of a row: each aligned quad as
// (e0, e2, e1, e3).
func mhAt(k int) int {
	switch k & 3 {
	case 1:
		return k + 1
	case 2:
		return k - 1
	}
	return k
}

// mhPlain is x stored as mh_x stores it, without its scale (exact).
func mhPlain(x []float64) []float64 {
	xh := make([]float64, len(x))
	for k, v := range x {
		xh[mhAt(k)] = v
	}
	return xh
}

// mhModel models MhQ4K for dt Q4_K (hi16: MhQ4K<true>) or Q5_K (MhQ5K).
func mhModel(t *testing.T, dt tensor.DType, hi16 bool) {
	rng := rand.New(rand.NewPCG(7, 8))
	const K, rows, T, W = 4352, 21, 5, 4 // 17 super-blocks over 4 warps; a partial second tile of rows
	rb, _ := dt.Bytes(K)
	data := modelBlocks(rng, dt, rows, K, 0, 2)
	m := qmem{buf: data, base: 1 << 20}
	x := make([]float64, T*K)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	// mh_x: xh[t][at] = x/xs (/16 in odd sub-blocks with hi16), each quad stored (e0, e2, e1, e3).
	xh, xs := make([]float64, T*K), make([]float64, T)
	for tk := 0; tk < T; tk++ {
		mx := 0.0
		for _, v := range x[tk*K : (tk+1)*K] {
			mx = math.Max(mx, math.Abs(v))
		}
		_, e := math.Frexp(mx)
		xs[tk] = math.Ldexp(1, e-10)
		for k := 0; k < K; k++ {
			v := x[tk*K+k] / xs[tk]
			if hi16 && k&32 != 0 {
				v /= 16
			}
			xh[tk*K+mhAt(k)] = v
		}
	}
	// half is the low half of u as a value.
	half := func(u uint32) float64 { return float64(f16At(u)) }
	for row0 := 0; row0 < rows; row0 += 16 { // a block
		var acc [W][16][8]float64 // [warp][row][token]: C fragments
		for w := 0; w < W; w++ {
			for sb := w; sb < K/256; sb += W {
				hd, q, qh := q4kLaneLoads(t, m, dt, rb, rows, row0, sb)
				for p := 0; p < 4; p++ {
					// sc, mn [lane][row][h]: the values of the broadcast fp16 pairs
					var sc, mn [32][2][2]float64
					for lane := 0; lane < 32; lane++ {
						for r := 0; r < 2; r++ {
							sh := uint(16 * (p & 1))
							a, b, cc := hd[lane][r][1]>>sh, hd[lane][r][2]>>sh, hd[lane][r][3]>>sh
							s6, m6 := a&0x3f3f, b&0x3f3f
							if p >= 2 {
								s6 = (cc & 0x0f0f) | ((a >> 2) & 0x3030)
								m6 = ((cc >> 4) & 0x0f0f) | ((b >> 2) & 0x3030)
							}
							d, dmin := half(hd[lane][r][0]), half(hd[lane][r][0]>>16)
							sp := [2]uint32{(s6 & 0xff) | 0x6400, ((s6 >> 8) & 0xff) | 0x6400} // byte_perm 0x4140 | bias
							mp := [2]uint32{(m6 & 0xff) | 0x6400, ((m6 >> 8) & 0xff) | 0x6400}
							dm2 := [2]float64{-dmin, -dmin}
							if hi16 {
								dm2[1] *= 16
							}
							for h := 0; h < 2; h++ {
								sc[lane][r][h] = (half(sp[h]) - 1024) * d
								mn[lane][r][h] = (half(mp[h]) - 1024) * dm2[h]
							}
						}
					}
					for h := 0; h < 2; h++ {
						for e := 0; e < 2; e++ {
							var A [16][16]float64
							var B [16][8]float64
							for lane := 0; lane < 32; lane++ {
								g, j := lane>>2, lane&3
								var xb [4]float64 // the uint2's four halves
								if g < T {
									o := g*K + 32*(sb*8+2*p+h) + 8*j + 4*e
									copy(xb[:], xh[o:o+4])
								}
								var a [4][2]float64 // a[i]: the pair of register i (low half first)
								for r := 0; r < 2; r++ {
									u := q[lane][r][p][e]
									if !hi16 {
										u >>= uint(4 * h)
									}
									if dt == tensor.Q5_K { // bit 2p+h of each qh byte to bit 4
										b := qh[lane][r][e] >> uint(2*p+h)
										u = u&0x0f0f0f0f | (b&0x01010101)<<4
									}
									nib := func(u uint32) [2]float64 { // nib_f16 (Q5_K: bits_f16<0x001f001f>), less the bias
										mask := uint32(0x000f000f)
										if hi16 && h == 1 {
											mask = 0x00f000f0
										}
										if dt == tensor.Q5_K {
											mask = 0x001f001f
										}
										v := (u & mask) | 0x64006400
										return [2]float64{half(v) - 1024, half(v>>16) - 1024}
									}
									lo, hi := nib(u), nib(u>>8)
									for i := 0; i < 2; i++ {
										a[r][i] = lo[i]*sc[lane][r][h] + mn[lane][r][h]
										a[2+r][i] = hi[i]*sc[lane][r][h] + mn[lane][r][h]
									}
								}
								for i := 0; i < 2; i++ {
									A[g][2*j+i] = a[0][i]
									A[g+8][2*j+i] = a[1][i]
									A[g][2*j+8+i] = a[2][i]
									A[g+8][2*j+8+i] = a[3][i]
									B[2*j+i][g] = xb[i]
									B[2*j+8+i][g] = xb[2+i]
								}
							}
							mmaAdd(&acc[w], &A, &B)
						}
					}
				}
			}
		}
		checkModelRows(t, fmt.Sprintf("%v hi16 %v", dt, hi16), dt, data, rows, K, T, row0, 1e-5, 1e-9,
			func(tk, k int) float64 { return x[tk*K+k] },
			func(r, tk int) float64 { return sumWarps(acc[:], r, tk) * xs[tk] })
	}
}

// TestMH6Model is TestMHModel for MhQ6K (Q6_K): which ql and qh bytes a
// lane takes, the 6-bit values' fp16 pairs, the scales, against
// DequantRow.
func TestMH6Model(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const K, rows, T, W = 4352, 21, 5, 8 // 17 super-blocks over 8 warps; a partial second tile of rows
	rb, _ := tensor.Q6_K.Bytes(K)
	data := modelBlocks(rng, tensor.Q6_K, rows, K, 208)
	x := make([]float64, T*K)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	xh := mhPlain(x)
	half := func(u uint32) float64 { return float64(f16At(u)) }
	word := func(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
	for row0 := 0; row0 < rows; row0 += 16 {
		var acc [W][16][8]float64
		for w := 0; w < W; w++ {
			for sb := w; sb < K/256; sb += W {
				var A [2][2][4][16][16]float64 // [n][h][e]: the mma's A
				var B [2][2][4][16][8]float64
				for lane := 0; lane < 32; lane++ {
					g, j := lane>>2, lane&3
					cl, l0 := j>>1, 16*(j&1)
					for r := 0; r < 2; r++ {
						bp := min(row0+g+8*r, rows-1)*rb + sb*210
						d := float64(tensor.F16ToF32(binary.LittleEndian.Uint16(data[bp+208:])))
						for n := 0; n < 2; n++ {
							for h := 0; h < 2; h++ {
								sc := float64(int8(data[bp+192+8*n+2*cl+(j&1)+4*h]))
								S := d * sc // __hmul(d, sc), less its rounding
								qc := cl
								if h == 1 {
									qc = 2 + cl
								}
								for e := 0; e < 4; e++ {
									ql := word(data[bp+64*n+16*j+4*e:])
									qh := word(data[bp+128+32*n+l0+4*e:])
									var v uint32
									if h == 1 {
										v = ((ql >> 4) & 0x0f0f0f0f) | ((qh >> uint(2*cl)) & 0x30303030)
									} else {
										v = (ql & 0x0f0f0f0f) | ((qh << uint(4-2*cl)) & 0x30303030)
									}
									lo := (v & 0x003f003f) | 0x64006400
									hi := ((v >> 8) & 0x003f003f) | 0x64006400
									for i := 0; i < 2; i++ {
										A[n][h][e][g+8*r][2*j+i] = (half(lo>>(16*i)) - 1056) * S
										A[n][h][e][g+8*r][2*j+8+i] = (half(hi>>(16*i)) - 1056) * S
									}
									if r == 0 && g < T {
										o := g*K + 256*sb + 128*n + 32*qc + l0 + 4*e
										B[n][h][e][2*j][g], B[n][h][e][2*j+1][g] = xh[o], xh[o+1]
										B[n][h][e][2*j+8][g], B[n][h][e][2*j+9][g] = xh[o+2], xh[o+3]
									}
								}
							}
						}
					}
				}
				for n := 0; n < 2; n++ {
					for h := 0; h < 2; h++ {
						for e := 0; e < 4; e++ {
							mmaAdd(&acc[w], &A[n][h][e], &B[n][h][e])
						}
					}
				}
			}
		}
		checkModelRows(t, "", tensor.Q6_K, data, rows, K, T, row0, 1e-5, 1e-9,
			func(tk, k int) float64 { return x[tk*K+k] },
			func(r, tk int) float64 { return sumWarps(acc[:], r, tk) })
	}
}

// TestMHG4Model is TestMHModel for MhG4, Q8_0 (MhQ80) and Q4_0 (MhQ40):
// lane j takes block j of each group of 4, mma i its elements 4i..4i+3
// (Q8_0's word i; Q4_0's word i%4, its low nibbles for i < 4, else its
// high ones), against DequantRow.
func TestMHG4Model(t *testing.T) {
	for _, c := range []struct {
		dt   tensor.DType
		seed uint64
	}{{tensor.Q8_0, 11}, {tensor.Q4_0, 13}} {
		mhG4Model(t, c.dt, rand.New(rand.NewPCG(c.seed, c.seed+1)))
	}
}

func mhG4Model(t *testing.T, dt tensor.DType, rng *rand.Rand) {
	const K, rows, T, W = 4352, 21, 5, 8 // 34 groups of 4 blocks over 8 warps; a partial second tile of rows
	q8 := dt == tensor.Q8_0
	rb, _ := dt.Bytes(K)
	bb, nq, bias := 18, 4, 1032.0 // MhG4's BB, NQ and the pairs' bias
	if q8 {
		bb, nq, bias = 34, 8, 1152
	}
	data := modelBlocks(rng, dt, rows, K, 0)
	x := make([]float64, T*K)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	xh := mhPlain(x)
	half := func(u uint32) float64 { return float64(f16At(u)) }
	perm := func(x, y uint32, s uint32) uint32 { // __byte_perm
		b := [8]uint32{x & 0xff, x >> 8 & 0xff, x >> 16 & 0xff, x >> 24, y & 0xff, y >> 8 & 0xff, y >> 16 & 0xff, y >> 24}
		return b[s&7] | b[s>>4&7]<<8 | b[s>>8&7]<<16 | b[s>>12&7]<<24
	}
	for row0 := 0; row0 < rows; row0 += 16 {
		var acc [W][16][8]float64
		for w := 0; w < W; w++ {
			for gr := w; gr < K/128; gr += W {
				for i := 0; i < 8; i++ {
					var A [16][16]float64
					var B [16][8]float64
					for lane := 0; lane < 32; lane++ {
						g, j := lane>>2, lane&3
						for r := 0; r < 2; r++ {
							bp := min(row0+g+8*r, rows-1)*rb + (4*gr+j)*bb
							d := float64(tensor.F16ToF32(binary.LittleEndian.Uint16(data[bp:])))
							wd := binary.LittleEndian.Uint32(data[bp+2+4*(i%nq):])
							var lo, hi uint32
							if q8 {
								u := wd ^ 0x80808080
								lo, hi = perm(u, 0x64646464, 0x4240), perm(u, 0x64646464, 0x4341)
							} else {
								u := wd >> (4 * (i / 4))
								lo, hi = u&0x000f000f|0x64006400, u>>8&0x000f000f|0x64006400 // nib_f16
							}
							for h := 0; h < 2; h++ {
								A[g+8*r][2*j+h] = (half(lo>>(16*h)) - bias) * d
								A[g+8*r][2*j+8+h] = (half(hi>>(16*h)) - bias) * d
							}
						}
						if g < T {
							o := g*K + 128*gr + 32*j + 4*i
							B[2*j][g], B[2*j+1][g], B[2*j+8][g], B[2*j+9][g] = xh[o], xh[o+1], xh[o+2], xh[o+3]
						}
					}
					mmaAdd(&acc[w], &A, &B)
				}
			}
		}
		checkModelRows(t, dt.String(), dt, data, rows, K, T, row0, 1e-5, 1e-9,
			func(tk, k int) float64 { return x[tk*K+k] },
			func(r, tk int) float64 { return sumWarps(acc[:], r, tk) })
	}
}

// modelBlocks is rows rows of K random dt blocks for the kernel models:
// random bytes, but each block's fp16 scales at the byte offsets at set to
// 0.5e-3..1.5e-3 (a real file's size).
func modelBlocks(rng *rand.Rand, dt tensor.DType, rows, K int, at ...int) []byte {
	rb, _ := dt.Bytes(K)
	data := make([]byte, rows*rb)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for o := 0; o < len(data); o += dt.BlockBytes() {
		for _, a := range at {
			binary.LittleEndian.PutUint16(data[o+a:], tensor.F32ToF16(float32(0.5+rng.Float64())*1e-3))
		}
	}
	return data
}

// q4kLaneLoads is what mqm_body and MhQ4K load of super-block sb of the
// 16-row tile at row0 (rows of rb bytes at m): lane 4g+j's rows g and g+8,
// each its 16-byte head and, of each 32-byte quant chunk p, the 8 bytes at
// 8j (ld8_stream: 8-aligned).
func q4kLaneLoads(t *testing.T, m qmem, dt tensor.DType, rb, rows, row0, sb int) (hd [32][2][4]uint32, q [32][2][4][2]uint32, qh [32][2][2]uint32) {
	bb, qs := 144, 16
	if dt == tensor.Q5_K {
		bb, qs = 176, 48
	}
	for lane := 0; lane < 32; lane++ {
		g, j := lane>>2, lane&3
		for r := 0; r < 2; r++ {
			bp := m.base + min(row0+g+8*r, rows-1)*rb + sb*bb
			hd[lane][r] = m.ld16(t, bp)
			if dt == tensor.Q5_K {
				qh[lane][r] = [2]uint32{m.word(bp + 16 + 8*j), m.word(bp + 16 + 8*j + 4)}
			}
			for p := 0; p < 4; p++ {
				a := bp + qs + 32*p + 8*j
				if a%8 != 0 {
					t.Fatalf("ld8_stream of %#x: not 8-aligned", a)
				}
				q[lane][r][p] = [2]uint32{m.word(a), m.word(a + 4)}
			}
		}
	}
	return hd, q, qh
}

// mmaAdd is mma.sync m16n8k16 in exact arithmetic: acc += A . B.
func mmaAdd(acc *[16][8]float64, A *[16][16]float64, B *[16][8]float64) {
	for r := 0; r < 16; r++ {
		for c := 0; c < 8; c++ {
			for k := 0; k < 16; k++ {
				acc[r][c] += A[r][k] * B[k][c]
			}
		}
	}
}

// sumWarps is row r, token tk of the warps' partial sums, added in warp
// order.
func sumWarps[A ~[16][8]float64](acc []A, r, tk int) float64 {
	var v float64
	for _, a := range acc {
		v += a[r][tk]
	}
	return v
}

// checkModelRows compares a kernel model's rows [row0, row0+16) of a
// product with data (rows, K) of dt at T tokens, got(r, tk), with the
// CPU's dequantized rows dotted with x(tk, k) in float64: within
// rel*|ref| + abs.
func checkModelRows(t *testing.T, what string, dt tensor.DType, data []byte, rows, K, T, row0 int, rel, abs float64,
	x func(tk, k int) float64, got func(r, tk int) float64) {
	t.Helper()
	Wr := make([]float32, K)
	tt := &tensor.Tensor{DType: dt, Shape: []int{rows, K}, Data: data}
	for r := 0; r < 16 && row0+r < rows; r++ {
		cpu.DequantRow(Wr, tt, row0+r)
		for tk := 0; tk < T; tk++ {
			var ref float64
			for k := 0; k < K; k++ {
				ref += float64(Wr[k]) * x(tk, k)
			}
			if g := got(r, tk); math.Abs(g-ref) > rel*math.Abs(ref)+abs {
				t.Fatalf("%s row %d token %d: model %g, dequantized %g", what, row0+r, tk, g, ref)
			}
		}
	}
}
