package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// A Go model of kernels/quant.cu's weight decoding (unit, win/extract,
// scale_min_pair, hi16, the dp4a dots) and of the units' activation groups
// (unitGroups),
// checked against the CPU's DequantRow on random blocks at addresses of
// every alignment, without a GPU. It mirrors the CUDA code line for line:
// change both together. (On the device, cuda-check -checks quant compares
// the kernels themselves with float64.)

// qmem is device memory as the model sees it: buf at address base.
type qmem struct {
	buf  []byte
	base int
}

func (m qmem) word(addr int) uint32 { return binary.LittleEndian.Uint32(m.buf[addr-m.base:]) }

// win is win<n>: the n*16 bytes from p rounded down to 16.
func (m qmem) win(p, n int) []uint32 {
	a := p &^ 15
	w := make([]uint32, 4*n)
	for i := range w {
		w[i] = m.word(a + 4*i)
	}
	return w
}

// ld16 is ld_stream: 16 bytes from a 16-aligned address.
func (m qmem) ld16(t *testing.T, p int) [4]uint32 {
	if p%16 != 0 {
		t.Fatalf("ld_stream of %#x: not 16-aligned", p)
	}
	return [4]uint32{m.word(p), m.word(p + 4), m.word(p + 8), m.word(p + 12)}
}

func (m qmem) ld16u(p int) [4]uint32 {
	o := qextract(m.win(p, 2), p&15, 4)
	return [4]uint32{o[0], o[1], o[2], o[3]}
}

func funnelR(lo, hi uint32, s int) uint32 { return uint32((uint64(hi)<<32 | uint64(lo)) >> s) }

// qextract is extract<NW, M>.
func qextract(w []uint32, off, M int) []uint32 {
	n := len(w)
	at := func(v []uint32, j int) uint32 {
		if j < n {
			return v[j]
		}
		return 0
	}
	ws, bs := off>>2, (off&3)*8
	a, b := make([]uint32, n), make([]uint32, n)
	for j := range a {
		a[j] = w[j]
		if ws&1 != 0 {
			a[j] = at(w, j+1)
		}
	}
	for j := range b {
		b[j] = a[j]
		if ws&2 != 0 {
			b[j] = at(a, j+2)
		}
	}
	o := make([]uint32, M)
	for i := range o {
		o[i] = funnelR(b[i], at(b, i+1), bs)
	}
	return o
}

func qscaleMinPair(p int, s0, s1, s2 uint32) (sc0, sc1, m0, m1 float32) {
	sh := 16 * (p & 1)
	a, b, c := s0>>sh, s1>>sh, s2>>sh
	sc, m := a&0x3f3f, b&0x3f3f
	if p >= 2 {
		sc = (c & 0x0f0f) | ((a >> 2) & 0x3030)
		m = ((c >> 4) & 0x0f0f) | ((b >> 2) & 0x3030)
	}
	return float32(sc & 0xff), float32((sc >> 8) & 0xff), float32(m & 0xff), float32((m >> 8) & 0xff)
}

func qnib(v [4]uint32, hi int) (o [4]uint32) {
	for i := range v {
		o[i] = (v[i] >> (4 * hi)) & 0x0f0f0f0f
	}
	return o
}

func qhi16(v [4]uint32) (o [4]uint32) {
	for i := range v {
		o[i] = v[i] & 0xf0f0f0f0
	}
	return o
}

func qorHi(q, h [4]uint32, sh int, mask uint32) [4]uint32 {
	for i := range q {
		q[i] |= ((h[i] >> sh) & mask) << 4
	}
	return q
}

// qunit is QU: the two groups' quant bytes, a, b, and whether the second
// group is dotted unsigned (HI16).
type qunit struct {
	q    [2][4]uint32
	a, b [2]float32
	us1  bool
}

func f16At(v uint32) float32 { return tensor.F16ToF32(uint16(v)) }

// decodeUnit is QT::unit for dt: unit u of the row at address rp.
func decodeUnit(t *testing.T, dt tensor.DType, m qmem, rp, u int) qunit {
	var o qunit
	switch dt {
	case tensor.Q4_K, tensor.Q5_K:
		bp := rp + (u>>3)*dt.BlockBytes()
		c := u & 7
		h := m.ld16(t, bp)
		d, dmin := f16At(h[0]&0xffff), f16At(h[0]>>16)
		sc0, sc1, m0, m1 := qscaleMinPair(c>>1, h[1], h[2], h[3])
		o.a = [2]float32{d * sc0, d * sc1}
		o.b = [2]float32{dmin * m0, dmin * m1}
		if dt == tensor.Q4_K {
			q := m.ld16(t, bp+16+16*c)
			o.q[0], o.q[1], o.us1 = qnib(q, 0), qhi16(q), true
			o.a[1] = d * sc1 * 0.0625
		} else {
			j0 := 2 * (c >> 1)
			qh, q := m.ld16(t, bp+16+16*(c&1)), m.ld16(t, bp+48+16*c)
			o.q[0], o.q[1] = qorHi(qnib(q, 0), qh, j0, 0x01010101), qorHi(qnib(q, 1), qh, j0+1, 0x01010101)
		}
	case tensor.Q6_K:
		bp := rp + (u>>3)*210
		c := u & 7
		n, kk, h := c>>2, (c>>1)&1, c&1
		ql, qh := m.ld16u(bp+16*c), m.ld16u(bp+128+32*n+16*h)
		d := f16At(uint32(binary.LittleEndian.Uint16(m.buf[bp+208-m.base:])))
		sc := m.buf[bp+192+8*n+2*kk+h-m.base:]
		o.a = [2]float32{d * float32(int8(sc[0])), d * float32(int8(sc[4]))}
		o.b = [2]float32{32 * o.a[0], 32 * o.a[1]}
		s0, s1 := 4-2*kk, 2*kk
		for i := range ql {
			o.q[0][i] = ql[i]&0x0f0f0f0f | (qh[i]<<s0)&0x30303030
			o.q[1][i] = (ql[i]>>4)&0x0f0f0f0f | (qh[i]>>s1)&0x30303030
		}
	case tensor.Q4_0:
		bp := rp + u*18
		o4 := qextract(m.win(bp, 2), bp&15, 5)
		q := [4]uint32{funnelR(o4[0], o4[1], 16), funnelR(o4[1], o4[2], 16), funnelR(o4[2], o4[3], 16), funnelR(o4[3], o4[4], 16)}
		d := f16At(o4[0] & 0xffff)
		o.a, o.b = [2]float32{d, d * 0.0625}, [2]float32{8 * d, 8 * d}
		o.q[0], o.q[1], o.us1 = qnib(q, 0), qhi16(q), true
	case tensor.Q8_0:
		bp := rp + u*34
		q := qextract(m.win(bp, 3), bp&15, 9)
		for i := 0; i < 4; i++ {
			o.q[0][i], o.q[1][i] = funnelR(q[i], q[i+1], 16), funnelR(q[i+4], q[i+5], 16)
		}
		d := f16At(q[0] & 0xffff)
		o.a = [2]float32{d, d}
	}
	return o
}

func qdp4a(a, b uint32, unsigned bool) int {
	s := 0
	for i := 0; i < 4; i++ {
		wa := int(int8(a >> (8 * i)))
		if unsigned {
			wa = int(uint8(a >> (8 * i)))
		}
		s += wa * int(int8(b>>(8*i)))
	}
	return s
}

// TestQuantLayoutModel: for every type, rows of random blocks (the last
// ones at addresses of every alignment mod 16), the model's unit dots
// against an activation stored in plain order (the groups unitGroups names) equal the dequantized rows'
// dots to float64 rounding.
func TestQuantLayoutModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, K := range []int{1024, 4352} {
		for _, dt := range []tensor.DType{tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.Q4_0, tensor.Q8_0} {
			const rows = 9
			rb, _ := dt.Bytes(K)
			data := make([]byte, rows*rb+quantPad)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			for o := 0; o < rows*rb; o += dt.BlockBytes() { // finite scales
				put := func(off int) {
					binary.LittleEndian.PutUint16(data[o+off:], tensor.F32ToF16(float32(0.5+rng.Float64())*1e-3))
				}
				switch dt {
				case tensor.Q6_K:
					put(208)
				case tensor.Q4_K, tensor.Q5_K:
					put(0)
					put(2)
				default:
					put(0)
				}
			}
			m := qmem{buf: data, base: 1 << 20}
			tt := &tensor.Tensor{DType: dt, Shape: []int{rows, K}, Data: data[:rows*rb]}
			W := make([]float32, K)
			xq := make([]int8, K)
			for i := range xq {
				xq[i] = int8(rng.IntN(255) - 127)
			}
			dx := make([]float64, K/16)
			for i := range dx {
				dx[i] = 0.5 + rng.Float64()
			}
			sm := make([][2]float64, K/16) // per group: dx, dx * sum of its q (qx's float2)
			for g := range sm {
				sum := 0
				for _, v := range xq[16*g : 16*g+16] {
					sum += int(v)
				}
				sm[g] = [2]float64{dx[g], dx[g] * float64(sum)}
			}
			seen := map[int]bool{} // every group of the row exactly once
			for u := 0; u < K/32; u++ {
				g0, gs := unitGroups(dt, u)
				for _, g := range []int{g0, g0 + gs} {
					if seen[g] || g>>4 != u>>3 {
						t.Fatalf("%v: unit %d: group %d twice or outside its super-block", dt, u, g)
					}
					seen[g] = true
				}
			}
			for r := 0; r < rows; r++ {
				cpu.DequantRow(W, tt, r)
				var ref float64
				for k := 0; k < K; k++ {
					ref += float64(W[k]) * dx[k/16] * float64(xq[k])
				}
				var got float64
				for u := 0; u < K/32; u++ {
					o := decodeUnit(t, dt, m, m.base+r*rb, u)
					g0, gs := unitGroups(dt, u)
					for j := 0; j < 2; j++ {
						sl, dot := g0+j*gs, 0
						for i := 0; i < 4; i++ {
							xw := binary.LittleEndian.Uint32([]byte{byte(xq[16*sl+4*i]), byte(xq[16*sl+4*i+1]), byte(xq[16*sl+4*i+2]), byte(xq[16*sl+4*i+3])})
							dot += qdp4a(o.q[j][i], xw, j == 1 && o.us1)
						}
						got += sm[sl][0]*float64(o.a[j])*float64(dot) - float64(o.b[j])*sm[sl][1]
					}
				}
				if math.Abs(got-ref) > 1e-6*math.Abs(ref) {
					t.Errorf("%v K=%d row %d: model %g, dequantized %g", dt, K, r, got, ref)
				}
			}
		}
	}
}

// TestMQSplit: llama-8b's shapes on an H200 (132 SMs).
func TestMQSplit(t *testing.T) {
	for _, c := range []struct {
		rows int
		dt   tensor.DType
		want int
	}{{14336, tensor.Q4_K, 1}, {128256, tensor.Q6_K, 1}, {6144, tensor.Q4_K, 2}, {4096, tensor.Q4_K, 2}, {512, tensor.Q8_0, 4}, {4096, tensor.Q4_0, 2}, {4096, tensor.Q8_0, 4},
		{4096, tensor.Q6_K, 2}, {4096, tensor.Q5_K, 2}, {6144, tensor.Q6_K, 2}} {
		if got := mqSplit(c.rows, 132, c.dt); got != c.want {
			t.Errorf("mqSplit(%d, 132, %v) = %d, want %d", c.rows, c.dt, got, c.want)
		}
	}
}

// The tensor-core Q4_K products take Q4_K rows of whole super-blocks at
// 1..16 tokens with the knob on, in tiles of 8 tokens; everything else
// stays on the dp4a kernels.
func TestMQMTile(t *testing.T) {
	cases := []struct {
		name       string
		on         bool
		dt         tensor.DType
		cols, T, w int
	}{
		{"off", false, tensor.Q4_K, 4096, 1, 0},
		{"decode", true, tensor.Q4_K, 4096, 1, 8},
		{"verify of 8", true, tensor.Q4_K, 14336, 8, 8},
		{"verify of 9", true, tensor.Q4_K, 4096, 9, 16},
		{"verify of 16", true, tensor.Q4_K, 4096, 16, 16},
		{"more than a pass", true, tensor.Q4_K, 4096, 17, 0},
		{"no tokens", true, tensor.Q4_K, 4096, 0, 0},
		{"Q6_K", true, tensor.Q6_K, 4096, 1, 0},
		{"Q8_0", true, tensor.Q8_0, 4096, 5, 0},
		{"partial super-block", true, tensor.Q4_K, 4096 + 32, 1, 0},
	}
	for _, c := range cases {
		if got := mqmTile(c.on, c.dt, c.cols, c.T, 16); got != c.w {
			t.Errorf("%s: mqmTile(%v, %v, %d, %d) = %d, want %d", c.name, c.on, c.dt, c.cols, c.T, got, c.w)
		}
	}
}

// The fp16 tensor-core products take Q4_K, Q5_K, Q6_K, Q8_0 and Q4_0 rows of whole
// units with the knob on, and each name mhKernel gives is instantiated in
// kernels/quant_mh.cu (MHG_KERNEL makes mhq_ and mhg_ of a type and
// block size).
func TestMHKernel(t *testing.T) {
	cases := []struct {
		name, prefix string
		warps        int
		dt           tensor.DType
		cols         int
		want         string
	}{
		{"off", "mhq", 0, tensor.Q4_K, 4096, ""},
		{"Q4_K", "mhq", 16, tensor.Q4_K, 4096, "mhq_q4k_w16"},
		{"Q4_K GLU", "mhg", 8, tensor.Q4_K, 4096, "mhg_q4k_w8"},
		{"Q6_K down", "mhq", 8, tensor.Q6_K, 14336, "mhq_q6k_w8"},
		{"Q8_0", "mhq", 16, tensor.Q8_0, 4096 + 128, "mhq_q80_w16"},
		{"Q8_0 partial group", "mhq", 16, tensor.Q8_0, 4096 + 32, ""},
		{"Q4_K partial super-block", "mhq", 8, tensor.Q4_K, 4096 + 128, ""},
		{"Q5_K", "mhq", 8, tensor.Q5_K, 4096, "mhq_q5k_w8"},
		{"Q5_K partial super-block", "mhq", 8, tensor.Q5_K, 4096 + 128, ""},
		{"BF16", "mhq", 8, tensor.BF16, 4096, ""},
		{"Q4_0", "mhq", 8, tensor.Q4_0, 4096, "mhq_q40_w8"},
		{"Q4_0 partial group", "mhq", 8, tensor.Q4_0, 4096 + 64, ""},
		{"4 warps", "mhq", 4, tensor.Q4_K, 4096, ""},
	}
	for _, c := range cases {
		if got := mhKernel(c.prefix, c.warps, c.dt, c.cols); got != c.want {
			t.Errorf("%s: mhKernel(%s, %d, %v, %d) = %q, want %q", c.name, c.prefix, c.warps, c.dt, c.cols, got, c.want)
		}
	}
	src, err := os.ReadFile("../../kernels/quant_mh.cu")
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []tensor.DType{tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.Q8_0, tensor.Q4_0} {
		for _, w := range []int{8, 16} {
			name := mhKernel("mhq", w, dt, 4096)
			inst := fmt.Sprintf("MHG_KERNEL(%s, %d, ", name[len("mhq_"):strings.Index(name, "_w")], w)
			if !strings.Contains(string(src), "\n"+inst) {
				t.Errorf("%s: kernels/quant_mh.cu has no %s...)", name, inst)
			}
		}
	}
}

// Past one n-tile the fp16 products run in launches of 8 tokens that
// cover every token once, in order.
func TestMHTile(t *testing.T) {
	for _, c := range []struct {
		T    int
		want [][2]int
	}{
		{1, [][2]int{{0, 1}}},
		{5, [][2]int{{0, 5}}},
		{8, [][2]int{{0, 8}}},
		{9, [][2]int{{0, 8}, {8, 1}}},
		{16, [][2]int{{0, 8}, {8, 8}}},
	} {
		var got [][2]int
		if err := mhTile(c.T, func(t0, n int) error { got = append(got, [2]int{t0, n}); return nil }); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("T=%d: launches %v, want %v", c.T, got, c.want)
		}
	}
}

// RIGSCOPE_CUDA_MQV: the entries parse into the one-token kernels they
// name, and every variant is instantiated in kernels/quant_mv.cu with the
// rows per group Go sizes its grid by (mqGrid) and the loading its suffix
// says; with every K split its blocks own rows dividing 32 (mq_quant_out).
func TestMQV(t *testing.T) {
	def, err := parseMQV("none", true)
	if err != nil || def.kern != nil || def.ks2 != nil || def.String() != "none" {
		t.Fatalf("none: %+v, %v", def, err)
	}
	if _, err := parseMQV("q80r2,nope", true); err == nil {
		t.Errorf("unknown entry: no error")
	}
	unset, err := parseMQV("", false)
	if err != nil || unset.String() != defaultMQV {
		t.Fatalf("unset: %+v, %v (want %s)", unset, err, defaultMQV)
	}
	if v, ok := unset.variant("mqn", "q6k", 1024); !ok || v.suffix != "r2b" {
		t.Errorf("default: mqn_q6k on 1024 rows %+v %v, want r2b", v, ok)
	}
	if _, ok := unset.variant("mqn", "q6k", 128256); ok {
		t.Errorf("default: mqn_q6k on 128256 rows has a variant (q6n2 stops at 2048 rows)")
	}
	if _, ok := unset.variant("mqn", "q4k", 6144); ok {
		t.Errorf("default: mqn_q4k has a variant")
	}
	k, err := parseMQV(" q6glu2, q80r2 ,q80ks2", true)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := k.variant("mqg", "q6k", 14336); !ok || v != (mqVariant{"r2b", 2, 0}) {
		t.Errorf("q6glu2: mqg_q6k %+v %v", v, ok)
	}
	if _, ok := k.variant("mq", "q6k", 4096); ok {
		t.Errorf("q6glu2 set mq_q6k")
	}
	for _, p := range []string{"mq", "mqn", "mqg"} {
		if v, ok := k.variant(p, "q80", 4096); !ok || v != (mqVariant{"r2b", 2, 0}) {
			t.Errorf("q80r2: %s_q80 %+v %v", p, v, ok)
		}
	}
	if k.split(4, tensor.Q8_0) != 2 || k.split(1, tensor.Q8_0) != 1 || k.split(4, tensor.Q4_K) != 4 || def.split(4, tensor.Q8_0) != 4 {
		t.Errorf("q80ks2: split wrong")
	}
	if k.String() != "q6glu2,q80r2,q80ks2" {
		t.Errorf("String %q", k.String())
	}
	src, err := os.ReadFile("../../kernels/quant_mv.cu")
	if err != nil {
		t.Fatal(err)
	}
	macro := map[string]string{"mq": "MQ_MQ", "mqn": "MQ_MQN", "mqg": "MQ_MQG"}
	qt := map[string]string{"q4k": "QQ4K", "q5k": "QQ5K", "q6k": "QQ6K", "q40": "QQ40", "q80": "QQ80"}
	for name, e := range mqvEntries {
		for _, kn := range e.kernels {
			prefix, suf, _ := strings.Cut(kn, "_")
			bv := 0
			if strings.HasSuffix(e.v.suffix, "b") {
				bv = 1
			}
			line := fmt.Sprintf("\n%s(%s, %s, 1, %s, %d, %d, MV_WARPS)\n", macro[prefix], suf, qt[suf], e.v.suffix, e.v.rows, bv)
			if !strings.Contains(string(src), line) {
				t.Errorf("%s: quant_mv.cu has no line %q", name, strings.TrimSpace(line))
			}
			for _, ks := range []int{1, 2, 4} {
				if rpb := e.v.rows * (4 / ks); 32%rpb != 0 {
					t.Errorf("%s: %d rows a block at ks %d", name, rpb, ks)
				}
			}
		}
	}
}

func TestMQW(t *testing.T) {
	none, err := parseMQW("none", true)
	if err != nil || none.kern != nil || none.String() != "none" {
		t.Fatalf("none: %+v, %v", none, err)
	}
	if _, _, _, ok := none.wide("mqg_q4k_1", 14336, 1); ok {
		t.Errorf("none: a wide variant")
	}
	if _, err := parseMQW("q4glu8,nope", true); err == nil {
		t.Errorf("unknown entry: no error")
	}
	def, err := parseMQW("", false)
	if err != nil || def.String() != defaultMQW {
		t.Fatalf("unset: %+v, %v (want %s)", def, err, defaultMQW)
	}
	for _, c := range []struct {
		kernel     string
		rows, ks   int
		name       string
		blocks, th int
	}{
		{"mqg_q4k_1", 14336, 1, "mqg_q4k_1w8", 448, 256},
		{"mq_q4k_1r2b", 4096, 2, "mq_q4k_1r2bw32", 128, 1024},
		{"mqg_q80_1r2b", 14336, 1, "", 0, 0}, // measured slower: no wide variant
		{"mq_q40_1", 4096, 2, "mq_q40_1w16", 128, 512},
		{"mqg_q4k_1", 14336, 2, "", 0, 0},  // 16 rows a block: not a whole group
		{"mq_q4k_1r2b", 4096, 4, "", 0, 0}, // 8 warps a group's 2 rows
		{"mqg_q4k_1", 14320, 1, "", 0, 0},  // rows not whole groups
		{"mqg_q5k_1", 14336, 1, "", 0, 0},  // no wide variant
	} {
		name, grid, th, ok := def.wide(c.kernel, c.rows, c.ks)
		if ok != (c.name != "") || name != c.name || (ok && (grid != [3]int{c.blocks, 1, 1} || th != c.th)) {
			t.Errorf("wide(%s, %d rows, ks %d) = %s %v %d %v, want %s %d blocks of %d", c.kernel, c.rows, c.ks, name, grid, th, ok, c.name, c.blocks, c.th)
		}
	}
	src, err := os.ReadFile("../../kernels/quant_mv.cu")
	if err != nil {
		t.Fatal(err)
	}
	macro := map[string]string{"mq": "MQ_MQ", "mqn": "MQ_MQN", "mqg": "MQ_MQG"}
	qt := map[string]string{"q4k": "QQ4K", "q5k": "QQ5K", "q6k": "QQ6K", "q40": "QQ40", "q80": "QQ80"}
	for name, e := range mqwEntries {
		prefix, rest, _ := strings.Cut(e.kernel, "_")
		suf, variant, _ := strings.Cut(rest, "_1")
		rv, bv := 0, -1
		if variant == "r2b" {
			rv, bv = 2, 1
		}
		if want := map[bool]int{true: 2, false: 4}[variant == "r2b"]; e.v.rows != want {
			t.Errorf("%s: %d rows a group, the kernel has %d", name, e.v.rows, want)
		}
		line := fmt.Sprintf("\n%s(%s, %s, 1, %sw%d, %d, %d, %d)\n", macro[prefix], suf, qt[suf], variant, e.v.warps, rv, bv, e.v.warps)
		if !strings.Contains(string(src), line) {
			t.Errorf("%s: quant_mv.cu has no line %q", name, strings.TrimSpace(line))
		}
	}
}

func TestMQBucket(t *testing.T) {
	for _, c := range []struct{ T, bucket, rows int }{
		{1, 1, 4}, {2, 2, 4}, {3, 4, 4}, {4, 4, 4}, {5, 5, 2}, {6, 8, 2}, {8, 8, 2}, {9, 16, 2}, {16, 16, 2},
	} {
		if b, r := mqBucket(c.T), mqRows(c.T); b != c.bucket || r != c.rows {
			t.Errorf("T=%d: bucket %d, rows %d; want %d, %d", c.T, b, r, c.bucket, c.rows)
		}
	}
}
