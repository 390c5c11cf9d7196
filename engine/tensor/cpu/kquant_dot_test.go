package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"rigscope/engine/tensor"
)

// randKQuantRows is rows random k-quant rows of cols weights with sane f16
// scales (random bits can be NaN or huge).
func randKQuantRows(rng *rand.Rand, dt tensor.DType, rows, cols int) *tensor.Tensor {
	rb, _ := dt.Bytes(cols)
	data := make([]byte, rows*rb)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	offs := []int{0, 2}
	if dt == tensor.Q6_K {
		offs = []int{208}
	}
	for b := 0; b < len(data); b += dt.BlockBytes() {
		for _, o := range offs {
			binary.LittleEndian.PutUint16(data[b+o:], tensor.F32ToF16(rng.Float32()/64))
		}
	}
	return &tensor.Tensor{Name: "w", DType: dt, Shape: []int{rows, cols}, Data: data}
}

func randActs(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
		if i%97 == 0 {
			x[i] *= 20 // outliers, as real activations have
		}
	}
	return x
}

var kquantDTypes = []tensor.DType{tensor.Q4_K, tensor.Q5_K, tensor.Q6_K}

// TestKQuantDotVsFloat64: each kernel's product of a k-quant row with a
// Q8_K-quantized activation row equals the float64 product of the
// dequantized row with the dequantized activation up to float32 rounding,
// on random blocks, into poisoned outputs; and the product with the
// activation before quantization is within the quantization's bound.
func TestKQuantDotVsFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 5))
	for _, dt := range kquantDTypes {
		for _, portable := range []bool{true, false} {
			t.Run(fmt.Sprintf("%v/portable=%v", dt, portable), func(t *testing.T) {
				defer usePortable(portable)()
				for _, cols := range []int{256, 512, 1280} {
					const rows = 9
					w := randKQuantRows(rng, dt, rows, cols)
					x := randActs(rng, cols)
					var a q8K
					a.size(cols)
					quantizeRowQ8K(&a, x)
					out := make([]float32, rows+1)
					for i := range out {
						out[i] = float32(math.NaN())
					}
					kind, _ := kquantKindOf(dt)
					dotKQuantRows(out[:rows], w.Data, w.RowBytes(), kind, &a)
					if !math.IsNaN(float64(out[rows])) {
						t.Fatalf("cols %d: wrote past its rows", cols)
					}
					wr := make([]float32, cols)
					for r := range rows {
						DequantRow(wr, w, r)
						var exact, mag, bound float64 // bound: |w|·(dx/2) per weight
						for i, v := range wr {
							xq := float64(a.d[i/256]) * float64(a.qs[i])
							exact += float64(v) * xq
							mag += math.Abs(float64(v) * xq)
							bound += math.Abs(float64(v)) * float64(a.d[i/256]) / 2
						}
						var full float64
						for i, v := range wr {
							full += float64(v) * float64(x[i])
						}
						got := float64(out[r])
						if math.IsNaN(got) || math.Abs(got-exact) > 1e-5*mag+1e-6 {
							t.Fatalf("cols %d row %d: %g, float64 of the same quantized operands %g (|terms| %g)", cols, r, got, exact, mag)
						}
						if math.Abs(got-full) > bound*1.001+1e-5*mag+1e-6 {
							t.Fatalf("cols %d row %d: %g, float64 of the unquantized activation %g: off by more than the bound %g", cols, r, got, full, bound)
						}
					}
				}
			})
		}
	}
}

// TestKQuantDotAsmMatchesGo: the assembly kernels give the portable ones'
// results bit for bit, for every row count (the row loop's tail).
func TestKQuantDotAsmMatchesGo(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(4, 9))
	for _, dt := range kquantDTypes {
		kind, _ := kquantKindOf(dt)
		for _, rows := range []int{1, 2, 3, 5, 8, 17} {
			cols := 256 * (1 + rng.IntN(6))
			w := randKQuantRows(rng, dt, rows, cols)
			var a q8K
			a.size(cols)
			quantizeRowQ8K(&a, randActs(rng, cols))
			got, want := make([]float32, rows), make([]float32, rows)
			dotKQuantRows(got, w.Data, w.RowBytes(), kind, &a)
			dotKQuantRowsGo(want, w.Data, w.RowBytes(), kind, &a)
			for r := range rows {
				if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
					t.Fatalf("%v rows %d cols %d: row %d asm %g, Go %g", dt, rows, cols, r, got[r], want[r])
				}
			}
		}
	}
}

// TestQuantizeRowQ8K: every quantized value is within half a step of x,
// the scales are max|x|/127 and the sums are the sums of the quants.
func TestQuantizeRowQ8K(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := randActs(rng, 768)
	copy(x[256:512], make([]float32, 256)) // an all-zero block
	var a q8K
	a.size(len(x))
	quantizeRowQ8K(&a, x)
	for i, v := range x {
		d := a.d[i/256]
		if got := d * float32(a.qs[i]); math.Abs(float64(got-v)) > float64(d)/2*1.0001 {
			t.Fatalf("x[%d] = %g quantized to %d * %g", i, v, a.qs[i], d)
		}
	}
	if a.d[1] != 0 {
		t.Errorf("zero block: scale %g", a.d[1])
	}
	for g := range a.s16 {
		var s int16
		for _, q := range a.qs[g*16 : g*16+16] {
			s += int16(q)
		}
		if a.s16[g] != s || a.s32[g/2] != a.s16[g/2*2]+a.s16[g/2*2+1] {
			t.Fatalf("group %d: sums %d, %d", g, a.s16[g], a.s32[g/2])
		}
	}
}

// TestMatMulKQuantBatchInvariant: a k-quant product over T tokens gives
// each token the result of a one-token product, bit for bit, across thread
// counts, and a fused job list gives each job its own product.
func TestMatMulKQuantBatchInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	const cols, T = 512, 7
	ws := []*tensor.Tensor{
		randKQuantRows(rng, tensor.Q4_K, 40, cols),
		randKQuantRows(rng, tensor.Q6_K, 24, cols),
		randKQuantRows(rng, tensor.Q5_K, 16, cols),
	}
	x := randActs(rng, T*cols)
	for _, th := range []int{1, 2, 3} {
		p := NewPool(th)
		outs := make([][]float32, len(ws))
		jobs := make([]MatMulJob, len(ws))
		for i, w := range ws {
			outs[i] = make([]float32, T*w.Rows())
			jobs[i] = MatMulJob{Out: outs[i], OutStride: w.Rows(), W: w}
		}
		p.MatMulFused(x, T, jobs...)
		for i, w := range ws {
			one := make([]float32, w.Rows())
			for tok := range T {
				p.MatMul(one, w.Rows(), x[tok*cols:(tok+1)*cols], 1, w)
				for r, v := range one {
					if g := outs[i][tok*w.Rows()+r]; math.Float32bits(g) != math.Float32bits(v) {
						t.Fatalf("threads %d %v token %d row %d: batched %g, alone %g", th, w.DType, tok, r, g, v)
					}
				}
			}
		}

	}
}

// BenchmarkKQuantRows: one decode product of 1024 rows of 2048 weights
// (bytes/s: weight bytes read).
func BenchmarkKQuantRows(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	const rows, cols = 1024, 2048
	for _, dt := range kquantDTypes {
		b.Run(dt.String(), func(b *testing.B) {
			w := randKQuantRows(rng, dt, rows, cols)
			var a q8K
			a.size(cols)
			quantizeRowQ8K(&a, randActs(rng, cols))
			out := make([]float32, rows)
			kind, _ := kquantKindOf(dt)
			b.SetBytes(int64(len(w.Data)))
			for b.Loop() {
				dotKQuantRows(out, w.Data, w.RowBytes(), kind, &a)
			}
		})
	}
}

// TestQuantizeRowQ8KAsm: the assembly quantizer gives the Go one's bits.
func TestQuantizeRowQ8KAsm(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	for _, n := range []int{256, 512, 1792} {
		x := randActs(rng, n)
		if n > 256 {
			copy(x[:256], make([]float32, 256)) // a zero block
			x[300] = 127.5                      // an extreme
		}
		var a, b q8K
		a.size(n)
		b.size(n)
		quantizeRowQ8K(&a, x)
		quantizeRowQ8KGo(&b, x)
		for i := range a.qs {
			if a.qs[i] != b.qs[i] {
				t.Fatalf("n %d: q[%d] %d, Go %d", n, i, a.qs[i], b.qs[i])
			}
		}
		for i := range a.d {
			if math.Float32bits(a.d[i]) != math.Float32bits(b.d[i]) {
				t.Fatalf("n %d: d[%d] %g, Go %g", n, i, a.d[i], b.d[i])
			}
		}
		for i := range a.s16 {
			if a.s16[i] != b.s16[i] || a.s32[i/2] != b.s32[i/2] {
				t.Fatalf("n %d: sums at %d differ", n, i)
			}
		}
	}
}

// TestKQuantX4MatchesGo: the four-token kernels give each (row, token) the
// portable kernel's bits, into a strided output with poisoned gaps.
func TestKQuantX4MatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 1))
	for _, dt := range kquantDTypes {
		kind, _ := kquantKindOf(dt)
		for _, rows := range []int{1, 3, 16} {
			cols := 256 * (1 + rng.IntN(4))
			w := randKQuantRows(rng, dt, rows, cols)
			var all q8K
			all.size(4 * cols)
			quantizeRowQ8K(&all, randActs(rng, 4*cols))
			ostride := rows + 3
			out := make([]float32, 4*ostride)
			for i := range out {
				out[i] = float32(math.NaN())
			}
			if !dotKQuantRowsX4(out, ostride, rows, w.Data, w.RowBytes(), kind, &all, cols) {
				continue // no four-token kernel for dt here
			}
			for k := range 4 {
				tok := all.view(k, k+1, cols)
				want := make([]float32, rows)
				dotKQuantRowsGo(want, w.Data, w.RowBytes(), kind, &tok)
				for r := range ostride {
					g := out[k*ostride+r]
					if r >= rows {
						if !math.IsNaN(float64(g)) {
							t.Fatalf("%v rows %d: wrote out[%d*%d+%d]", dt, rows, k, ostride, r)
						}
						continue
					}
					if math.Float32bits(g) != math.Float32bits(want[r]) {
						t.Fatalf("%v rows %d cols %d token %d row %d: %g, Go %g", dt, rows, cols, k, r, g, want[r])
					}
				}
			}
		}
	}
}
