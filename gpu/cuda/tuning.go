package cuda

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// argmaxBlocks is AM_BLOCKS (kernels/argmax.cu): the argmax kernels'
// blocks per logits row by default, and the most their partials' buffers
// hold (Tuning.ArgmaxBlocks picks fewer).
const argmaxBlocks = 32

// Tuning is every measurement knob of the CUDA backend (the RIGSCOPE_CUDA_*
// variables), parsed once per process (CurrentTuning) so that no launch
// reads the environment. The zero value is not the default: use
// ParseTuning. The knobs exist for comparisons in one device call
// (bench/cuda/knobs.sh, variants.sh); the defaults are the measured best.
type Tuning struct {
	PTX           string   // RIGSCOPE_CUDA_PTX: a rebuilt PTX variant (or a cubin built from it) to load instead of the embedded one
	TensorCores   bool     // RIGSCOPE_CUDA_TC=0: bf16 layer weights stay row-major on the CUDA cores
	OutputTC      bool     // RIGSCOPE_CUDA_TCOUT=0: only the output projection on the CUDA cores
	PDL           bool     // RIGSCOPE_CUDA_PDL=0: no programmatic dependent launch
	MQV           mqvKnob  // RIGSCOPE_CUDA_MQV=q80r2,q80ks2,...|none: variants of the one-token quantized products (quant_layout.go mqvEntries; unset: defaultMQV)
	MQW           mqwKnob  // RIGSCOPE_CUDA_MQW=q4glu8,...|none: wide one-token variants of the products that quantize their output, a block a 32-row group (quant_layout.go mqwEntries; unset: defaultMQW)
	MQN2          bool     // RIGSCOPE_CUDA_MQN2=0: a mixed qkv stack's two parts (Q4_K or Q5_K with Q6_K) in a launch each, not one mqn2_* launch (quant.go mqn2Kernel)
	MQM           int      // RIGSCOPE_CUDA_MQM=1|8|16: Q4_K products on the int8 tensor cores (quant_mma.cu; experimental, off by default), blocks of 4 (1), 8 or 16 warps; 0: off
	MH            int      // RIGSCOPE_CUDA_MH=8|16: Q4_K, Q5_K, Q6_K, Q8_0 and Q4_0 products on the fp16 tensor cores at every T (quant_mh.go; experimental, off by default: on the H200 a Q4_K_M verify of 5 costs 42% less, a decode step 1.6x more, results/s23), blocks of 8 or 16 warps; 0: off
	MQK           int      // RIGSCOPE_CUDA_MQK=4|8|16: Q4_K and Q6_K products with x in Q8_K on the int8 tensor cores at every T (quant_mqk.go; experimental, off by default), blocks of 4, 8 or 16 warps, or auto (a shape per matrix: mqkShape); 0: off
	MQK1          bool     // RIGSCOPE_CUDA_MQK1=0: under MQK, one-token products on the tensor cores too, not their dp4a twins (mqk1_*, kernels/quant_mqk1.cu: the same bits, about the dp4a default's speed, results/s35 m1)
	L2Prefetch    bool     // RIGSCOPE_CUDA_L2PF=1: the products prefetch their weights into L2 before pdl_wait (kernels.cu l2_prefetch; off: on the H200 the products ran 13-19% slower with it, bench/cuda/results/s12/final/quant.txt against s11)
	Ahead         bool     // RIGSCOPE_CUDA_AHEAD=0: plain greedy steps one at a time (ForwardIDs), not enqueued a step ahead (ahead.go)
	EaglePipe     bool     // RIGSCOPE_CUDA_EAGLEPIPE=0: an EAGLE-3 chain is read back before the verify (two synchronizes a step)
	EagleCycle    bool     // RIGSCOPE_CUDA_EAGLECYCLE=0: greedy EAGLE-3 steps driven by the host (verify, then the next chain, a synchronize each), not kept on the device (cycle.go)
	EagleInFold   bool     // RIGSCOPE_CUDA_EAGLEIN=0: each EAGLE-3 draft step builds its input with eagle_in, not the previous step's argmax (argmax_d2t_in)
	HeadOut       bool     // RIGSCOPE_CUDA_HEADOUT=1|0: an EAGLE-3 greedy chain's draft token in one kernel, lm_head with the argmax (tcnam*, kernels/headout.cu), not tcn then argmax_d2t(_in)
	HeadOutAuto   bool     // RIGSCOPE_CUDA_HEADOUT unset: HeadOut by the head's width (LoadHead: headOutMaxDim)
	CaptureKernel bool     // RIGSCOPE_CUDA_CAPK=0: EAGLE-3 features copied out of a step by memcpy nodes, not the copy_f32 kernel
	RankStreams   bool     // RIGSCOPE_CUDA_RANKSTREAMS=0: TP ranks one after another on one stream
	RankDevices   bool     // RIGSCOPE_CUDA_RANKDEVS=each: ranks sharing a GPU open it once each and take the path of ranks on other GPUs (rankdev.go)
	SplitX        bool     // RIGSCOPE_CUDA_XF=0: wo and down split x themselves
	F8TC          string   // RIGSCOPE_CUDA_F8TC=1|gate_up|qkv|wo|down: FP8 layer matrices tiled for the tensor cores (f8tc*: fp8.cu, tc.cu), all of them (1) or one kind, not row-major on the CUDA cores (mv_f8); off by default until measured (s17: all is slower at T=1, gate_up alone faster)
	F8MV          f8mvKnob // RIGSCOPE_CUDA_F8MV=1[,r2|t][,p][,b|l][,ks1|ks2|ks4][,s|sw][,w4|w8|w16]: row-major FP8 products on mf8* (kernels/fp8_mv.cu, fp8_mvs.cu, fp8_mv.go) instead of mv_f8; default defaultF8MV (fp8_mv.go), 0: off
	AttnRows      int      // RIGSCOPE_CUDA_ATTROWS=8: query rows per attention block (default 4: enqueue.go attnLaunch)
	AttnMin       int      // RIGSCOPE_CUDA_ATTMIN=64|128: fewest cache slots per attention split (default 32)
	AttnSplits    int      // RIGSCOPE_CUDA_ATTS=1..32: attention splits (0: by shape)
	AttnGroup     int      // RIGSCOPE_CUDA_ATTGROUP=1|4: chunks combined in groups of 4 before the merge (attnplan.go; default 4); 1: the merge over every chunk
	AttnOne       bool     // RIGSCOPE_CUDA_ATTONE=0: steps of one token run the batch-invariant attention's general kernel, not its _t1 twin compiled for T = 1 (attnplan.go)
	AttnChain     bool     // RIGSCOPE_CUDA_ATTCHAIN=0: a speculative cycle's verify runs the batch-invariant attention's general kernel, not its _ch twin for chains (attnplan.go)
	AttnChunk     int      // RIGSCOPE_CUDA_ATTCHUNK=0|32|64|128|256: the batch-invariant attention's chunk (attnplan.go; default 32, longer past attnMaxChunks chunks); 0: the earlier split by the step's length, not batch-invariant
	ArgmaxBlocks  int      // RIGSCOPE_CUDA_AMBLOCKS=1..32: blocks per logits row of the argmax kernels (argmax_next, _rows, _accept, _d2t: launcher.amBlocks; default argmaxBlocks), to measure small vocabularies, where 32 blocks of 256 threads hold about half a logit a thread (gocoder's 4096)
	KV            kvFormat // RIGSCOPE_CUDA_KV=f32|bf16: the KV cache's element type (kvformat.go; default defaultKV)
	Prefill       string   // RIGSCOPE_CUDA_PREFILL=off|bf16|split|bf16fa|cublas|cublasfa: prompts 16 tokens a forward, or the prefill products with x in bf16 (hi) or split hi+lo (prefill.go), or bf16 with tensor-core attention, or the products through cuBLAS (the default; split without libcublas; prefill_cublas.go)
	Warps         []tcwRule
	RowTiles      map[string]rowTileRule // nil: the default policy (tcLaunch)
	// Kinds left out, launched twice, or followed by an empty kernel
	// (RIGSCOPE_CUDA_SKIP, _TWICE, _NOP): a step run with them computes
	// garbage; its time against the plain step's is what is measured.
	Skip, Twice, Nop map[string]bool
}

// CurrentTuning is the process's tuning, read from the environment on
// first use.
var CurrentTuning = sync.OnceValues(func() (Tuning, error) { return ParseTuning(os.LookupEnv) })

// ParseTuning reads the knobs through lookup (os.LookupEnv in the product).
func ParseTuning(lookup func(string) (string, bool)) (Tuning, error) {
	get := func(name string) string { v, _ := lookup(name); return v }
	t := Tuning{
		PTX:           get("RIGSCOPE_CUDA_PTX"),
		TensorCores:   get("RIGSCOPE_CUDA_TC") != "0",
		OutputTC:      get("RIGSCOPE_CUDA_TCOUT") != "0",
		PDL:           get("RIGSCOPE_CUDA_PDL") != "0",
		MQN2:          get("RIGSCOPE_CUDA_MQN2") != "0",
		MQK1:          get("RIGSCOPE_CUDA_MQK1") != "0",
		L2Prefetch:    get("RIGSCOPE_CUDA_L2PF") == "1",
		Ahead:         get("RIGSCOPE_CUDA_AHEAD") != "0",
		EaglePipe:     get("RIGSCOPE_CUDA_EAGLEPIPE") != "0",
		EagleCycle:    get("RIGSCOPE_CUDA_EAGLECYCLE") != "0",
		EagleInFold:   get("RIGSCOPE_CUDA_EAGLEIN") != "0",
		HeadOut:       get("RIGSCOPE_CUDA_HEADOUT") == "1",
		HeadOutAuto:   get("RIGSCOPE_CUDA_HEADOUT") == "",
		CaptureKernel: get("RIGSCOPE_CUDA_CAPK") != "0",
		RankStreams:   get("RIGSCOPE_CUDA_RANKSTREAMS") != "0",
		RankDevices:   get("RIGSCOPE_CUDA_RANKDEVS") == "each",
		SplitX:        get("RIGSCOPE_CUDA_XF") != "0",
		AttnOne:       get("RIGSCOPE_CUDA_ATTONE") != "0",
		AttnChain:     get("RIGSCOPE_CUDA_ATTCHAIN") != "0",
		F8TC:          f8tcKinds(get("RIGSCOPE_CUDA_F8TC")),
		AttnRows:      4,
		AttnMin:       32,
		AttnChunk:     32,
		AttnGroup:     4,
		Prefill:       prefillCublas, // split where cuBLAS cannot be loaded (initPrefill)
		Warps:         tcwRules(get("RIGSCOPE_CUDA_TCW")),
		Skip:          kinds(get("RIGSCOPE_CUDA_SKIP")),
		Twice:         kinds(get("RIGSCOPE_CUDA_TWICE")),
		Nop:           kinds(get("RIGSCOPE_CUDA_NOP")),
	}
	// The tensor-core product families' block sizes in warps (0: off; any
	// other value leaves the family off).
	t.MQM = map[string]int{"1": 4, "8": 8, "16": 16}[get("RIGSCOPE_CUDA_MQM")]
	t.MH = map[string]int{"8": 8, "16": 16}[get("RIGSCOPE_CUDA_MH")]
	t.MQK = map[string]int{"4": 4, "8": 8, "16": 16, "auto": mqkAuto}[get("RIGSCOPE_CUDA_MQK")]
	chosen := 0
	for _, on := range []bool{t.MH > 0, t.MQM > 0, t.MQK != 0} {
		if on {
			chosen++
		}
	}
	if chosen > 1 {
		return Tuning{}, fmt.Errorf("cuda: RIGSCOPE_CUDA_MH, RIGSCOPE_CUDA_MQM and RIGSCOPE_CUDA_MQK each choose the Q4_K products' kernels: set one of them")
	}
	if get("RIGSCOPE_CUDA_ATTROWS") == "8" {
		t.AttnRows = 8
	}
	switch get("RIGSCOPE_CUDA_ATTMIN") {
	case "64":
		t.AttnMin = 64
	case "128":
		t.AttnMin = 128
	}
	switch v := get("RIGSCOPE_CUDA_ATTCHUNK"); v {
	case "0", "32", "64", "128", "256":
		t.AttnChunk, _ = strconv.Atoi(v)
	}
	switch get("RIGSCOPE_CUDA_ATTGROUP") {
	case "1":
		t.AttnGroup = 1
	case "4":
		t.AttnGroup = 4
	}
	switch v := get("RIGSCOPE_CUDA_PREFILL"); v {
	case prefillOff, prefillBF16, prefillSplit, prefillBF16FA, prefillCublas, prefillCublasFA:
		t.Prefill = v
	}
	var err error
	if t.KV, err = parseKV(get("RIGSCOPE_CUDA_KV")); err != nil {
		return Tuning{}, err
	}
	mqv, set := lookup("RIGSCOPE_CUDA_MQV")
	if t.MQV, err = parseMQV(mqv, set); err != nil {
		return Tuning{}, err
	}
	mqw, set := lookup("RIGSCOPE_CUDA_MQW")
	if t.MQW, err = parseMQW(mqw, set); err != nil {
		return Tuning{}, err
	}
	if t.F8MV, err = parseF8MV(get("RIGSCOPE_CUDA_F8MV")); err != nil {
		return Tuning{}, err
	}
	if n, err := strconv.Atoi(get("RIGSCOPE_CUDA_AMBLOCKS")); err == nil && n >= 1 && n <= argmaxBlocks {
		t.ArgmaxBlocks = n
	}
	if n, err := strconv.Atoi(get("RIGSCOPE_CUDA_ATTS")); err == nil && n >= 1 && n <= 32 {
		t.AttnSplits = n
	}
	if env, ok := lookup("RIGSCOPE_CUDA_RT"); ok {
		if t.RowTiles, err = rowTiles(env); err != nil {
			return Tuning{}, err
		}
	}
	return t, nil
}

// The prefill modes (Tuning.Prefill).
const (
	prefillOff   = "off"   // prompts go MaxTokens a forward
	prefillBF16  = "bf16"  // x rounded to bf16 in the prefill products (pf_*)
	prefillSplit = "split" // x as bf16 hi + lo, two products (pfs_*): about 16 bits of x, as the decode kernels
	// bf16 with the attention on the tensor cores too (pf_fa, flash.cu;
	// experimental: head dims 64 and 128, others keep pf_attn)
	prefillBF16FA = "bf16fa"
	// the products through cuBLAS (x in bf16, float32 accumulation;
	// prefill_cublas.go), attention as bf16 (pf_attn) or as bf16fa (pf_fa);
	// without libcublas the split mode, said in PrefillPath
	prefillCublas   = "cublas"
	prefillCublasFA = "cublasfa"
)

// tcwRule is one entry of RIGSCOPE_CUDA_TCW: warps for kind, or for every
// kind when all.
type tcwRule struct {
	kind  string
	all   bool
	warps int
}

// tcwRules parses RIGSCOPE_CUDA_TCW=W or kind:W,... (W 8, 16 or 32; other
// entries are ignored), in order: a later entry overrides an earlier one.
func tcwRules(env string) []tcwRule {
	var rules []tcwRule
	for _, f := range strings.Split(env, ",") {
		kind, n, ok := strings.Cut(f, ":")
		if !ok {
			kind, n = "", kind
		}
		switch n {
		case "8", "16", "32":
			w, _ := strconv.Atoi(n)
			rules = append(rules, tcwRule{kind: kind, all: !ok, warps: w})
		}
	}
	return rules
}

// rowTileRule is one entry of RIGSCOPE_CUDA_RT=kind[:[v][R]],... or "none",
// which replaces the row-tile policy (tcLaunch) for comparisons (v: T > 1
// only; R defaults to 2).
type rowTileRule struct {
	tiles      int
	verifyOnly bool
}

// rowTiles parses RIGSCOPE_CUDA_RT's value.
func rowTiles(env string) (map[string]rowTileRule, error) {
	m := map[string]rowTileRule{}
	for _, k := range strings.Split(env, ",") {
		if k = strings.TrimSpace(k); k == "" || k == "none" {
			continue
		}
		kind, opt, _ := strings.Cut(k, ":")
		r := rowTileRule{tiles: 2}
		if r.verifyOnly = strings.HasPrefix(opt, "v"); r.verifyOnly {
			opt = opt[1:]
		}
		switch opt {
		case "":
		case "2", "4":
			r.tiles = int(opt[0] - '0')
		default:
			return nil, fmt.Errorf("cuda: RIGSCOPE_CUDA_RT: %q: want kind[:[v][2|4]]", k)
		}
		m[kind] = r
	}
	return m, nil
}

// kinds parses a comma-separated list of kernel kinds (attention, qkv, wo,
// gate_up, down, output, ...).
func kinds(env string) map[string]bool {
	m := map[string]bool{}
	for _, k := range strings.Split(env, ",") {
		if k = strings.TrimSpace(k); k != "" {
			m[k] = true
		}
	}
	return m
}

// f8tcKinds parses RIGSCOPE_CUDA_F8TC: "1" is every kind ("all"), a
// product kind (qkv, wo, gate_up, down) that one; anything else off.
func f8tcKinds(env string) string {
	switch env {
	case "1":
		return "all"
	case "qkv", "wo", "gate_up", "down":
		return env
	}
	return ""
}

// mqkAuto is Tuning.MQK's value for a block shape per matrix
// (RIGSCOPE_CUDA_MQK=auto: quant_mqk.go mqkShape).
const mqkAuto = -1
