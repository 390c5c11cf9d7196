package cuda

import (
	"fmt"
	"strconv"
	"strings"
)

// FP8 products in quant_mv.cu's shape (kernels/fp8_mv.cu, mf8*), by
// Tuning.F8MV instead of mv_f8 for the row-major (not tiled) FP8
// matrices: a group of ks warps owns R rows, ks by the matrix's shape
// (mf8Split) and never by T, so every T sums a row in the same order.

// defaultF8MV is RIGSCOPE_CUDA_F8MV unset. Measured on the H200 (llama-8b
// shape, FP8 with 128x128 block scales, cuda-bench, bench/cuda/results/s19/d1):
// 349.7 / 352.6 tok/s, 62-63% of the step's bound, against mv_f8's 265.2 /
// 264.6 (47%), the verify of 5 2% slower (8753 against 8575 us); the
// gocoder FP8 checks give tokens equal to the CPU's and verify rows bitwise
// the decode rows.
const defaultF8MV = "1,sw,w4"

// f8mvKnob is RIGSCOPE_CUDA_F8MV: off ("0"), the default (unset or "":
// defaultF8MV), or a
// comma-separated list that turns mf8* on: "1" (the defaults), "r2" (2
// rows a group at one token), "t" (one token's loads at the loop's top),
// "p" (one token: a persistent grid, the blocks that fit the SMs at once
// striding over the row blocks; not with t), "b" (several tokens: the next
// chunk loaded at the loop's bottom), "l" (several tokens: each chunk
// decoded in every token's dot, not once; not with b), "ks1", "ks2", "ks4" (every product's
// K split so, not by shape), "s" or "sw" (T = 2..8: mf8*_Ts / _Tsw,
// fp8_mvs.cu: T exact, each chunk decoded once and the next requested
// before the tokens' products, R 2 (GLU 1) or 4 (GLU 2) rows a group;
// b and l then apply at 16 tokens only), "w4", "w8", "w16" (s, sw: warps
// a block, 8 unless set; w16 s only).
type f8mvKnob struct {
	on  bool
	suf string // the one-token kernels' suffix (fp8_mv.cu MF8_INST) but p: "", "r2" or "t"
	p   bool   // persistent one-token kernels (suffix p after suf)
	mt  string // several tokens: the kernels' suffix, "" (decoded once), "b" (and loaded at the bottom), "l" (decoded every token)
	ks  int    // 0: mf8Split
	st  string // T = 2..8: "" (the bucket's kernel), "s" or "sw" (mf8*_Ts, _Tsw)
	bw  int    // s, sw: warps a block (0: 8)
}

func parseF8MV(env string) (f8mvKnob, error) {
	var k f8mvKnob
	switch env {
	case "0":
		return k, nil
	case "":
		env = defaultF8MV
	}
	for _, o := range strings.Split(env, ",") {
		switch o = strings.TrimSpace(o); o {
		case "1":
		case "r2", "t":
			k.suf = o
		case "p":
			k.p = true
		case "b", "l":
			if k.mt != "" && k.mt != o {
				return f8mvKnob{}, fmt.Errorf("cuda: RIGSCOPE_CUDA_F8MV: %q: b or l, not both", env)
			}
			k.mt = o
		case "ks1", "ks2", "ks4":
			k.ks = int(o[2] - '0')
		case "s", "sw":
			k.st = o
		case "w4", "w8", "w16":
			k.bw, _ = strconv.Atoi(o[1:])
		default:
			return f8mvKnob{}, fmt.Errorf("cuda: RIGSCOPE_CUDA_F8MV: %q: want 1, r2, t, p, b, l, ks1, ks2, ks4, s, sw, w4, w8 or w16", o)
		}
	}
	if k.p && k.suf == "t" {
		return f8mvKnob{}, fmt.Errorf("cuda: RIGSCOPE_CUDA_F8MV: %q: p loads at the bottom (not with t)", env)
	}
	if k.bw != 0 && k.st == "" {
		return f8mvKnob{}, fmt.Errorf("cuda: RIGSCOPE_CUDA_F8MV: %q: w4, w8 and w16 are the block of s or sw", env)
	}
	if k.bw == 16 && k.st != "s" {
		return f8mvKnob{}, fmt.Errorf("cuda: RIGSCOPE_CUDA_F8MV: %q: w16 is s's only (sw's kernels take 256 threads)", env)
	}
	k.on = true
	return k, nil
}

// String is the knob as RIGSCOPE_CUDA_F8MV spells it ("" off).
func (k f8mvKnob) String() string {
	if !k.on {
		return ""
	}
	o := []string{"1"}
	if k.suf != "" {
		o = append(o, k.suf)
	}
	if k.p {
		o = append(o, "p")
	}
	if k.mt != "" {
		o = append(o, k.mt)
	}
	if k.ks != 0 {
		o = append(o, fmt.Sprintf("ks%d", k.ks))
	}
	if k.st != "" {
		o = append(o, k.st)
	}
	if k.bw != 0 {
		o = append(o, fmt.Sprintf("w%d", k.bw))
	}
	return strings.Join(o, ",")
}

// mf8Split is the K split of an mf8* product of rows rows on sms SMs: the
// fewest of 1, 2, 4 warps a row group that gives at least 4 blocks an SM
// at one token's 4 rows a group (qkv 6144: 2, gate_up 14336: 1, wo and
// down 4096: 4 on the H200's 132 SMs), as mqSplit gives Q8_0's.
func mf8Split(rows, sms int) int {
	for _, ks := range []int{1, 2} {
		if (rows+3)/4*ks >= 16*sms {
			return ks
		}
	}
	return 4
}
