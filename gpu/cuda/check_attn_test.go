//go:build cuda

package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"rigscope/engine/tensor"
)

// attnCase is one attention kernel check (check_kernels_test.go): its
// shape, split count, RoPE layout and the architectures' extensions
// (attnx_ kernels: q/k/v biases, q/k head norms, a sliding window).
type attnCase struct {
	hq, hk, hd, base, T, S int
	inter                  bool
	bias, qkNorm           bool
	window                 int
}

func (c attnCase) ext() bool { return c.bias || c.qkNorm || c.window > 0 }

func (c attnCase) String() string {
	s := fmt.Sprintf("hq=%d hk=%d hd=%d base=%d T=%d S=%d", c.hq, c.hk, c.hd, c.base, c.T, c.S)
	if c.bias {
		s += " bias"
	}
	if c.qkNorm {
		s += " qknorm"
	}
	if c.window > 0 {
		s += fmt.Sprintf(" window=%d", c.window)
	}
	return s
}

// attnCases: every head dim, decode and verify, split counts from 1 to 32;
// then the extensions, alone and together, with windows shorter than the
// batch, than the cache, and longer than both; then single tokens.
var attnCases = []attnCase{
	{hq: 8, hk: 4, hd: 64, base: 300, T: 5, S: 7},
	{hq: 32, hk: 8, hd: 128, base: 511, T: 1, S: 32},
	{hq: 32, hk: 8, hd: 128, base: 511, T: 5, S: 32, inter: true},
	{hq: 4, hk: 2, hd: 32, base: 40, T: 16, S: 3},
	{hq: 16, hk: 2, hd: 64, base: 1000, T: 16, S: 9},
	{hq: 4, hk: 2, hd: 16, base: 0, T: 7, S: 1, inter: true},
	{hq: 8, hk: 8, hd: 256, base: 77, T: 2, S: 4},
	{hq: 8, hk: 4, hd: 64, base: 300, T: 5, S: 7, bias: true},
	{hq: 32, hk: 8, hd: 128, base: 511, T: 5, S: 32, qkNorm: true},
	{hq: 4, hk: 2, hd: 32, base: 200, T: 16, S: 5, bias: true, qkNorm: true, window: 48},
	{hq: 8, hk: 4, hd: 64, base: 300, T: 5, S: 7, window: 100},
	{hq: 4, hk: 2, hd: 32, base: 40, T: 16, S: 3, inter: true, window: 8},
	{hq: 16, hk: 2, hd: 64, base: 1000, T: 1, S: 9, window: 64},
	{hq: 8, hk: 8, hd: 256, base: 77, T: 2, S: 4, bias: true, qkNorm: true, window: 4096},
	{hq: 4, hk: 2, hd: 16, base: 0, T: 7, S: 1, bias: true, qkNorm: true, window: 3},
	// one token (the _t1 kernels) with the extensions, and into an empty cache
	{hq: 8, hk: 4, hd: 64, base: 300, T: 1, S: 7, bias: true},
	{hq: 8, hk: 8, hd: 256, base: 77, T: 1, S: 4, bias: true, qkNorm: true, window: 4096},
	{hq: 4, hk: 2, hd: 16, base: 0, T: 1, S: 1, inter: true},
}

// attnReference is what the attention kernel computes, in float64: out
// (T, hq*hd) and the cache (slots, hk*hd) with the T new slots written.
// bias (ld) and qkn (2*hd: q's, then k's weight) may be nil. stored, when
// set, is the cache (K, V) as a kernel with a bf16 cache wrote it: out is
// then the attention over its new slots (the values rounded to bf16), the
// returned refK, refV still the exact ones.
func attnReference(tc attnCase, qkv, Kc, Vc, cs, sn []float32, st *stepParams, bias, qkn []float32, eps, scale float64, stored [2][]float32) (out, refK, refV []float64) {
	hd, half := tc.hd, tc.hd/2
	slots := tc.base + tc.T
	width := tc.hk * hd
	ld := (tc.hq + 2*tc.hk) * hd
	G := tc.hq / tc.hk
	// head is one head of token t at column off of the qkv row: plus its
	// bias, RMSNormed with w, rotated when rot.
	head := func(t, off int, w []float32, rot bool) []float64 {
		x := make([]float64, hd)
		for e := range x {
			x[e] = float64(qkv[t*ld+off+e])
			if bias != nil {
				x[e] += float64(bias[off+e])
			}
		}
		if w != nil {
			var ss float64
			for _, v := range x {
				ss += v * v
			}
			inv := 1 / math.Sqrt(ss/float64(hd)+eps)
			for e := range x {
				x[e] *= inv * float64(w[e])
			}
		}
		if !rot {
			return x
		}
		p := int(st.Pos[t])
		r := make([]float64, hd)
		for j := 0; j < half; j++ {
			a, b := j, j+half
			if tc.inter {
				a, b = 2*j, 2*j+1
			}
			c, sv := float64(cs[p*half+j]), float64(sn[p*half+j])
			r[a] = x[a]*c - x[b]*sv
			r[b] = x[a]*sv + x[b]*c
		}
		return r
	}
	var qw, kw []float32
	if qkn != nil {
		qw, kw = qkn[:hd], qkn[hd:]
	}
	refK = make([]float64, slots*width)
	refV = make([]float64, slots*width)
	for i := 0; i < tc.base*width; i++ {
		refK[i], refV[i] = float64(Kc[i]), float64(Vc[i])
	}
	for t := 0; t < tc.T; t++ {
		for h := 0; h < tc.hk; h++ {
			k := head(t, (tc.hq+h)*hd, kw, true)
			v := head(t, (tc.hq+tc.hk+h)*hd, nil, false)
			copy(refK[(tc.base+t)*width+h*hd:], k)
			copy(refV[(tc.base+t)*width+h*hd:], v)
		}
	}
	attK, attV := refK, refV // what the scores and the sum read
	if stored[0] != nil {
		attK, attV = slices.Clone(refK), slices.Clone(refV)
		for i := tc.base * width; i < slots*width; i++ {
			attK[i], attV[i] = float64(stored[0][i]), float64(stored[1][i])
		}
	}
	pos := func(j int) int { // the position of cache slot j
		if j < tc.base {
			return j
		}
		return int(st.Pos[j-tc.base])
	}
	out = make([]float64, tc.T*tc.hq*hd)
	for t := 0; t < tc.T; t++ {
		for h := 0; h < tc.hq; h++ {
			kvh := h / G
			q := head(t, h*hd, qw, true)
			var sc []float64
			var idx []int
			for j := 0; j < slots; j++ {
				if j >= tc.base && st.Mask[t]>>(j-tc.base)&1 == 0 {
					continue
				}
				if tc.window > 0 && int(st.Pos[t])-pos(j) >= tc.window {
					continue
				}
				var dot float64
				for e := 0; e < hd; e++ {
					dot += q[e] * attK[j*width+kvh*hd+e]
				}
				sc = append(sc, dot*scale)
				idx = append(idx, j)
			}
			mx := math.Inf(-1)
			for _, v := range sc {
				mx = math.Max(mx, v)
			}
			var sum float64
			for i := range sc {
				sc[i] = math.Exp(sc[i] - mx)
				sum += sc[i]
			}
			for e := 0; e < hd; e++ {
				var a float64
				for i, j := range idx {
					a += sc[i] * attV[j*width+kvh*hd+e]
				}
				out[(t*tc.hq+h)*hd+e] = a / sum
			}
		}
	}
	return out, refK, refV
}

// kvCacheBytesOf is a cache (float32 values) as format f stores it: float32
// bits, or bf16 rounded to nearest even (NaN stays NaN).
func kvCacheBytesOf(v []float32, f kvFormat) []byte {
	if f != kvBF16 {
		return f32bytes(v)
	}
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], tensor.F32ToBF16(x))
	}
	return b
}

// kvCacheValues is a cache read back (raw: its bytes as float32 words) as
// float32 values: raw itself, or the bf16 pairs of each word (the low half
// first) widened.
func kvCacheValues(raw []float32, f kvFormat) []float32 {
	if f != kvBF16 {
		return raw
	}
	v := make([]float32, 2*len(raw))
	for i, w := range raw {
		bits := math.Float32bits(w)
		v[2*i], v[2*i+1] = tensor.BF16ToF32(uint16(bits)), tensor.BF16ToF32(uint16(bits>>16))
	}
	return v
}

// bf16NearErr says why got is not ref rounded to bf16: got must be a bf16
// value within 2^-8 of ref relative (half a bf16 step is 2^-9; the
// kernel rounds its float32 result, which may sit on the other side of a
// rounding boundary) plus 1e-5 (float32's error where a rotation cancels,
// for values of order 1 as the checks draw them).
func bf16NearErr(got float32, ref float64) error {
	if tensor.BF16ToF32(tensor.F32ToBF16(got)) != got || math.IsNaN(float64(got)) {
		return fmt.Errorf("%v is not a bf16 value", got)
	}
	if d := math.Abs(float64(got) - ref); d > math.Abs(ref)/256+1e-5 {
		return fmt.Errorf("%v is %.2e from the exact %v (more than 2^-8 of it)", got, d, ref)
	}
	return nil
}
