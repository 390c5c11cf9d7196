package cpu

import "math"

// A float32 exp for Softmax and SwiGLU (Cephes' expf): range reduction
// x = n·ln2 + r, a degree-5 polynomial for e^r, then a scale by 2^n;
// within 4e-7 relative of e^x over the clamped range [-87.3, 88]
// (TestExp32). Every step is a separately rounded float32 multiply or add
// (no fused multiply-add), so exp32 and
// the eight lanes of the AVX2 kernel give the same bits for the same input:
// a result depends on its input alone, never on the batch or the lane.
const (
	expHi    float32 = 88.0
	expLo    float32 = -87.33654
	expLog2e float32 = 1.44269504088896341
	expC1    float32 = 0.693359375
	expC2    float32 = -2.12194440e-4
	expP0    float32 = 1.9875691500e-4
	expP1    float32 = 1.3981999507e-3
	expP2    float32 = 8.3334519073e-3
	expP3    float32 = 4.1665795894e-2
	expP4    float32 = 1.6666665459e-1
	expP5    float32 = 5.0000001201e-1
)

// exp32 is e^x for finite x, inputs outside [expLo, expHi] clamped to it.
func exp32(x float32) float32 {
	x = min(max(x, expLo), expHi)
	fx := float32(math.RoundToEven(float64(float32(x * expLog2e))))
	r := x - float32(fx*expC1)
	r = r - float32(fx*expC2)
	z := float32(r * r)
	y := float32(expP0*r) + expP1
	y = float32(y*r) + expP2
	y = float32(y*r) + expP3
	y = float32(y*r) + expP4
	y = float32(y*r) + expP5
	y = float32(y*z) + r
	y = y + 1
	return y * math.Float32frombits(uint32(int32(fx)+127)<<23)
}

// softmaxExpGo sets x[i] = exp32(x[i]-m) for i < len(x) (a multiple of 8)
// and adds e_i into lanes[i%8]: the specification of softmaxExpAVX2.
func softmaxExpGo(x []float32, m float32, lanes *[8]float32) {
	for i := 0; i+8 <= len(x); i += 8 {
		for k := 0; k < 8; k++ {
			e := exp32(x[i+k] - m)
			x[i+k] = e
			lanes[k] += e
		}
	}
}

// swigluGo is SwiGLU's specification: out = g / (1 + exp32(-g)) * up.
func swigluGo(out, gate, up []float32) {
	up = up[:len(gate)]
	out = out[:len(gate)]
	for i, g := range gate {
		out[i] = float32(g/(1+exp32(-g))) * up[i]
	}
}
