package cuda

import (
	"fmt"
	"sort"
	"strings"

	"rigscope/engine/tensor"
)

// Host-side layout of the quantized products (kernels/quant.cu): they need
// no GPU (and no cuda build tag), so quant_layout_test.go checks them, and
// a Go model of the kernels' block decoding, everywhere.

// quantPad is the zero bytes after a quantized matrix: the kernels read
// the unaligned types (Q4_0, Q8_0, Q6_K) through aligned 16-byte windows
// that may end up to 15 bytes past the last block (win in quant.cu), or
// aligned 8-byte words up to 6 bytes past it (mqk6_load in quant_mqk.cu).
const quantPad = 32

// mqSplit is how many of a block's 4 warps split one row group's units
// (ks in quant_mv.cu) for a matrix of rows rows of type dt: 1 (each warp
// its own 4 rows, the most units per lane, the least per-thread
// overhead) where that still makes 16 warps per SM, else 2, else 4 for
// Q8_0 (llama-8b: gate/up and the output projection 1, qkv 2, wo and
// down 2, Q8_0's 4). The types whose one-token products load whole units
// ahead (quant.cu's BOTTOM: all but Q8_0) run faster at 2 than at 4
// (session 16's H200 sweep, bench/cuda/results/s16/q: Q4_K wo 8.8 us
// against 11.2, down 16.2 against 19.4, Q4_0 alike; Q5_K and Q6_K were
// at 2 already); Q8_0's products load as before, where 4 stays faster
// (wo 10.9 against 11.3 us, down 23.0 against 25.5). It depends on the
// shape, the type and the device only, never on T, so every T sums a row
// in the same order.
func mqSplit(rows, sms int, dt tensor.DType) int {
	for _, ks := range []int{1, 2} {
		if (rows+3)/4*ks >= 16*sms {
			return ks
		}
	}
	if dt == tensor.Q8_0 {
		return 4
	}
	return 2
}

// unitGroups is grp and GS of quant.cu's type for dt: the activation
// slots (16-element groups in plain order) of unit u's two halves, g0 and
// g0 + gs. Q8_0, Q4_0: the unit is a 32-block, groups 2u and 2u+1; Q4_K,
// Q5_K: unit c of a super-block is half c%2 of sub-blocks 2(c/2) and
// 2(c/2)+1; Q6_K: unit c = 4n + 2kk + h is half h of quarters kk and kk+2
// of half n.
func unitGroups(dt tensor.DType, u int) (g0, gs int) {
	sb, c := u>>3, u&7
	switch dt {
	case tensor.Q4_K, tensor.Q5_K:
		return 16*sb + 4*(c>>1) + c&1, 2
	case tensor.Q6_K:
		return 16*sb + c + 4*(c>>2), 4
	}
	return 2 * u, 1
}

// mqmTile is the token tile of the Q4_K tensor-core products
// (kernels/quant_mma.cu) for a product of dt with cols columns at T tokens
// when the MQM knob is on: 8 (one n-tile of mma.sync) up to 8 tokens, 16
// (two) up to 16, or 0 where they do not apply (another type, a row of
// partial super-blocks, more tokens than a pass takes) and the dp4a
// kernels run.
func mqmTile(on bool, dt tensor.DType, cols, T, maxT int) int {
	switch {
	case !on || dt != tensor.Q4_K || cols%256 != 0 || T < 1 || T > 16 || T > maxT:
		return 0
	case T <= 8:
		return 8
	}
	return 16
}

// mhKernel is the fp16 tensor-core product (kernels/quant_mh.cu, the
// MH knob: warps a block, 8 or 16) of a matrix of dt with cols columns,
// prefix mhq (store or add) or mhg (the GLU), or "" where none applies
// (the knob off, another type, a row its units do not divide: the
// k-quants take super-blocks of 256, Q8_0 and Q4_0 groups of 4 blocks,
// 128) and the dp4a kernels run.
func mhKernel(prefix string, warps int, dt tensor.DType, cols int) string {
	suf, unit := "", 256
	switch dt {
	case tensor.Q4_K:
		suf = "q4k"
	case tensor.Q5_K:
		suf = "q5k"
	case tensor.Q6_K:
		suf = "q6k"
	case tensor.Q8_0:
		suf, unit = "q80", 128
	case tensor.Q4_0:
		suf, unit = "q40", 128
	}
	if suf == "" || (warps != 8 && warps != 16) || cols%unit != 0 {
		return ""
	}
	return fmt.Sprintf("%s_%s_w%d", prefix, suf, warps)
}

// mhTokens is the most tokens one fp16 tensor-core launch takes (one
// n-tile of mma.sync); more run as launches of up to mhTokens, which sum
// each (row, token) as one launch would.
const mhTokens = 8

// mhTile runs launch for each run of up to mhTokens of T tokens: the run's
// first token and length.
func mhTile(T int, launch func(t0, n int) error) error {
	for t0 := 0; t0 < T; t0 += mhTokens {
		if err := launch(t0, min(mhTokens, T-t0)); err != nil {
			return err
		}
	}
	return nil
}

// mqVariant is a one-token product kernel's variant (quant_mv.cu's end):
// the kernel name's suffix after _1 and its rows per group (its R).
type mqVariant struct {
	suffix  string
	rows    int
	maxRows int // the matrix rows it applies up to (0: any)
}

// mqvKnob is RIGSCOPE_CUDA_MQV (Tuning.MQV): variants of the one-token
// (T=1) quantized products; the zero value runs none (the kernels at
// mqRows with their type's loading), which RIGSCOPE_CUDA_MQV=none asks
// for. Unset, it is defaultMQV.
type mqvKnob struct {
	kern  map[string]mqVariant  // prefix_type ("mqg_q4k"): the variant its T=1 kernel runs
	ks2   map[tensor.DType]bool // K split 2 where mqSplit picks 4 (every T: a row sums the same for every T)
	names []string              // the entries, as given
}

// mqvEntries are RIGSCOPE_CUDA_MQV's entries (comma-separated; one that
// names a kernel another entry named replaces it): r2b 2 rows per group
// with BOTTOM loading (quant_mv.cu instantiates exactly these), q80ks2
// Q8_0's K split 2 where mqSplit picks 4.
var mqvEntries = map[string]struct {
	kernels []string
	v       mqVariant
	ks2     tensor.DType
}{
	"q4mq2":  {[]string{"mq_q4k"}, mqVariant{"r2b", 2, 0}, 0},
	"q6n2":   {[]string{"mqn_q6k"}, mqVariant{"r2b", 2, 2048}, 0},
	"q6glu2": {[]string{"mqg_q6k"}, mqVariant{"r2b", 2, 0}, 0},
	"q80r2":  {[]string{"mq_q80", "mqn_q80", "mqg_q80"}, mqVariant{"r2b", 2, 0}, 0},
	"q80ks2": {nil, mqVariant{}, tensor.Q8_0},
}

// defaultMQV is the measured default (H200, llama-8b shapes, T=1 with
// PDL, bench/cuda/results/s17/qglu): Q4_K's add products (wo, down) at 2
// rows, 6.9 / 13.9 us against 7.6 / 15.5 (its norm products and GLU lose
// at 2); Q6_K's GLU at 2 rows 36.4 us against 45.1 (255 registers at 4),
// and its norm products at 2 rows on small matrices only (the Q4_K_M qkv's
// Q6_K slice of 1024 rows: 9.7 us against 10.9 for the pair; the output
// projection loses 8% at 2); Q8_0 at 2 rows split 2 ways: its products a
// step 2455 us against 2670.
const defaultMQV = "q4mq2,q6glu2,q6n2,q80r2,q80ks2"

// parseMQV parses RIGSCOPE_CUDA_MQV (unset or empty: defaultMQV; "none":
// no variants); an unknown entry is an error.
func parseMQV(env string, set bool) (mqvKnob, error) {
	var k mqvKnob
	names, err := knobEntries("RIGSCOPE_CUDA_MQV", env, set, defaultMQV, mqvEntries)
	if err != nil {
		return mqvKnob{}, err
	}
	for _, f := range names {
		e := mqvEntries[f]
		for _, kn := range e.kernels {
			if k.kern == nil {
				k.kern = map[string]mqVariant{}
			}
			k.kern[kn] = e.v
		}
		if e.ks2 != 0 {
			if k.ks2 == nil {
				k.ks2 = map[tensor.DType]bool{}
			}
			k.ks2[e.ks2] = true
		}
	}
	k.names = names
	return k, nil
}

// knobEntries is the entries of a comma-separated knob (unset or empty:
// def; "none": none), each checked against entries: an unknown one is an
// error that lists them.
func knobEntries[E any](knob, env string, set bool, def string, entries map[string]E) ([]string, error) {
	switch {
	case !set || strings.TrimSpace(env) == "":
		env = def
	case env == "none":
		return nil, nil
	}
	var names []string
	for _, f := range strings.Split(env, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if _, ok := entries[f]; !ok {
			all := make([]string, 0, len(entries))
			for n := range entries {
				all = append(all, n)
			}
			sort.Strings(all)
			return nil, fmt.Errorf("cuda: %s: unknown entry %q (want some of %s)", knob, f, strings.Join(all, ","))
		}
		names = append(names, f)
	}
	return names, nil
}

// String is the entries, or "none".
func (k mqvKnob) String() string {
	if len(k.names) == 0 {
		return "none"
	}
	return strings.Join(k.names, ",")
}

// variant is the variant k sets for the one-token kernel of prefix (mq,
// mqn or mqg) and type suffix suf (q4k ...) on a matrix of rows rows, if
// any.
func (k mqvKnob) variant(prefix, suf string, rows int) (mqVariant, bool) {
	v, ok := k.kern[prefix+"_"+suf]
	if ok && v.maxRows > 0 && rows > v.maxRows {
		return mqVariant{}, false
	}
	return v, ok
}

// split is mqSplit's ks for dt as k changes it.
func (k mqvKnob) split(ks int, dt tensor.DType) int {
	if ks == 4 && k.ks2[dt] {
		return 2
	}
	return ks
}

// mqwKnob is RIGSCOPE_CUDA_MQW (Tuning.MQW): the wide one-token variants
// (kernels/quant_mv.cu, suffix w<warps>) of the products that quantize
// their output for the next one, by the one-token kernel each replaces.
// A wide block owns a whole 32-row group where warps / ks * rows per
// group is 32, and quantizes it itself (mq_quant_own) instead of the
// fence, atomic and read back of the group's last block (mq_quant_out);
// a row's sums do not depend on the block's warps.
type mqwKnob struct {
	kern  map[string]mqwVariant
	names []string
}

type mqwVariant struct {
	warps, rows int // a block's warps; the rows of a group (the kernel's R)
}

// mqwEntries are RIGSCOPE_CUDA_MQW's entries: the kernel each replaces,
// with the warps and rows per group quant_mv.cu instantiates.
var mqwEntries = map[string]struct {
	kernel string
	v      mqwVariant
}{
	"q4glu8":   {"mqg_q4k_1", mqwVariant{8, 4}},
	"q4add32":  {"mq_q4k_1r2b", mqwVariant{32, 2}},
	"q80add32": {"mq_q80_1r2b", mqwVariant{32, 2}},
	"q40glu8":  {"mqg_q40_1", mqwVariant{8, 4}},
	"q40add16": {"mq_q40_1", mqwVariant{16, 4}},
	"q6add16":  {"mq_q6k_1", mqwVariant{16, 4}}, // 128 registers: 16 warps an SM either way; not measured yet
}

// defaultMQW is the default of RIGSCOPE_CUDA_MQW: all of them but
// q6add16 (Q6_K's wo and down: a Q4_K_M file's Q6_K ffn_down; built, not
// yet measured), as measured on the H200 (bench/cuda/results/s21/s4; generate, llama-8b,
// alternating): Q4_K_M 487.1 against 454.7 tok/s, Q8_0 371.3 against
// 362.3; Q4_0's products a step 1649 against 1830 us with PDL.
const defaultMQW = "q4glu8,q4add32,q80add32,q40glu8,q40add16"

// parseMQW parses RIGSCOPE_CUDA_MQW (unset or empty: defaultMQW; "none":
// no wide variants); an unknown entry is an error.
func parseMQW(env string, set bool) (mqwKnob, error) {
	var k mqwKnob
	names, err := knobEntries("RIGSCOPE_CUDA_MQW", env, set, defaultMQW, mqwEntries)
	if err != nil {
		return mqwKnob{}, err
	}
	for _, f := range names {
		if k.kern == nil {
			k.kern = map[string]mqwVariant{}
		}
		k.kern[mqwEntries[f].kernel] = mqwEntries[f].v
	}
	k.names = names
	return k, nil
}

// String is the entries, or "none".
func (k mqwKnob) String() string {
	if len(k.names) == 0 {
		return "none"
	}
	return strings.Join(k.names, ",")
}

// wide is the wide variant of the one-token kernel name for a matrix of
// rows rows split ks ways: its name, grid and threads a block, where its
// blocks own whole 32-row groups (rows a multiple of 32).
func (k mqwKnob) wide(name string, rows, ks int) (string, [3]int, int, bool) {
	v, ok := k.kern[name]
	if !ok || rows%32 != 0 || v.warps%ks != 0 || v.warps/ks*v.rows != 32 {
		return "", [3]int{}, 0, false
	}
	return fmt.Sprintf("%sw%d", name, v.warps), [3]int{rows / 32, 1, 1}, 32 * v.warps, true
}

// mqBucket is the token bucket of the dp4a products (quant_mv.cu MQ_ALL):
// bucket(T), but 5 for T = 5, a chain verify of k = 4, whose kernels keep
// accumulators for 5 tokens rather than 8.
func mqBucket(T int) int {
	if T == 5 {
		return 5
	}
	return bucket(T)
}

// mqRows is MQ_ROWS in quant_mv.cu: the rows a row group of mq* owns for
// T tokens (a block: 4/ks groups).
func mqRows(T int) int {
	if mqBucket(T) <= 4 {
		return 4
	}
	return 2
}
