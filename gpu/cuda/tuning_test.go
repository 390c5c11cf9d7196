package cuda

import (
	"reflect"
	"testing"
)

// The knobs are parsed once into Tuning; each setting lands in its field,
// later TCW entries override earlier ones, malformed entries are ignored
// except RIGSCOPE_CUDA_RT's, which is an error.
func TestParseTuning(t *testing.T) {
	def, err := ParseTuning(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		vars map[string]string
		want func(*Tuning)
		err  bool
	}{
		{"defaults", nil, func(*Tuning) {}, false},
		{"switches off", map[string]string{"RIGSCOPE_CUDA_TC": "0", "RIGSCOPE_CUDA_TCOUT": "0", "RIGSCOPE_CUDA_PDL": "0", "RIGSCOPE_CUDA_RANKSTREAMS": "0", "RIGSCOPE_CUDA_XF": "0", "RIGSCOPE_CUDA_EAGLEPIPE": "0", "RIGSCOPE_CUDA_CAPK": "0", "RIGSCOPE_CUDA_EAGLEIN": "0", "RIGSCOPE_CUDA_AHEAD": "0", "RIGSCOPE_CUDA_EAGLECYCLE": "0"},
			func(w *Tuning) {
				w.TensorCores, w.OutputTC, w.PDL, w.RankStreams, w.SplitX, w.EaglePipe, w.CaptureKernel, w.EagleInFold, w.Ahead, w.EagleCycle = false, false, false, false, false, false, false, false, false, false
			}, false},
		{"fused draft token", map[string]string{"RIGSCOPE_CUDA_HEADOUT": "1"}, func(w *Tuning) { w.HeadOut, w.HeadOutAuto = true, false }, false},
		{"fused draft token off", map[string]string{"RIGSCOPE_CUDA_HEADOUT": "0"}, func(w *Tuning) { w.HeadOutAuto = false }, false},
		{"fused draft token other off", map[string]string{"RIGSCOPE_CUDA_HEADOUT": "on"}, func(w *Tuning) { w.HeadOutAuto = false }, false},
		{"rank devices", map[string]string{"RIGSCOPE_CUDA_RANKDEVS": "each"}, func(w *Tuning) { w.RankDevices = true }, false},
		{"fp8 on the tensor cores", map[string]string{"RIGSCOPE_CUDA_F8TC": "1"}, func(w *Tuning) { w.F8TC = "all" }, false},
		{"fp8 gate_up on the tensor cores", map[string]string{"RIGSCOPE_CUDA_F8TC": "gate_up"}, func(w *Tuning) { w.F8TC = "gate_up" }, false},
		{"fp8 tensor cores other ignored", map[string]string{"RIGSCOPE_CUDA_F8TC": "on"}, func(*Tuning) {}, false},
		{"fp8 mf8 products", map[string]string{"RIGSCOPE_CUDA_F8MV": "1"}, func(w *Tuning) { w.F8MV = f8mvKnob{on: true} }, false},
		{"fp8 mf8 variants", map[string]string{"RIGSCOPE_CUDA_F8MV": "r2,p,b,ks2"}, func(w *Tuning) { w.F8MV = f8mvKnob{on: true, suf: "r2", p: true, mt: "b", ks: 2} }, false},
		{"fp8 mf8 t not persistent", map[string]string{"RIGSCOPE_CUDA_F8MV": "t,p"}, nil, true},
		{"fp8 mf8 b not l", map[string]string{"RIGSCOPE_CUDA_F8MV": "b,l"}, nil, true},
		{"fp8 mf8 off", map[string]string{"RIGSCOPE_CUDA_F8MV": "0"}, func(w *Tuning) { w.F8MV = f8mvKnob{} }, false},
		{"fp8 mf8 malformed", map[string]string{"RIGSCOPE_CUDA_F8MV": "r3"}, func(*Tuning) {}, true},
		{"rank devices other ignored", map[string]string{"RIGSCOPE_CUDA_RANKDEVS": "1"}, func(*Tuning) {}, false},
		{"switch not 0 stays on", map[string]string{"RIGSCOPE_CUDA_TC": "1"}, func(*Tuning) {}, false},
		{"attention", map[string]string{"RIGSCOPE_CUDA_ATTROWS": "8", "RIGSCOPE_CUDA_ATTMIN": "128", "RIGSCOPE_CUDA_ATTS": "7"},
			func(w *Tuning) { w.AttnRows, w.AttnMin, w.AttnSplits = 8, 128, 7 }, false},
		{"attention out of range ignored", map[string]string{"RIGSCOPE_CUDA_ATTROWS": "16", "RIGSCOPE_CUDA_ATTMIN": "48", "RIGSCOPE_CUDA_ATTS": "33", "RIGSCOPE_CUDA_ATTCHUNK": "48"}, func(*Tuning) {}, false},
		{"attention chunk", map[string]string{"RIGSCOPE_CUDA_ATTCHUNK": "128"}, func(w *Tuning) { w.AttnChunk = 128 }, false},
		{"attention chunks merged one by one", map[string]string{"RIGSCOPE_CUDA_ATTGROUP": "1"}, func(w *Tuning) { w.AttnGroup = 1 }, false},
		{"attention group out of range ignored", map[string]string{"RIGSCOPE_CUDA_ATTGROUP": "3"}, func(*Tuning) {}, false},
		{"attention split by length", map[string]string{"RIGSCOPE_CUDA_ATTCHUNK": "0"}, func(w *Tuning) { w.AttnChunk = 0 }, false},
		{"argmax blocks", map[string]string{"RIGSCOPE_CUDA_AMBLOCKS": "4"}, func(w *Tuning) { w.ArgmaxBlocks = 4 }, false},
		{"argmax blocks out of range", map[string]string{"RIGSCOPE_CUDA_AMBLOCKS": "33"}, func(*Tuning) {}, false},
		{"attention one-token twin off", map[string]string{"RIGSCOPE_CUDA_ATTONE": "0"}, func(w *Tuning) { w.AttnOne = false }, false},
		{"attention chain twin off", map[string]string{"RIGSCOPE_CUDA_ATTCHAIN": "0"}, func(w *Tuning) { w.AttnChain = false }, false},
		{"warps", map[string]string{"RIGSCOPE_CUDA_TCW": "16,wo:32,:8,qkv:12,wo:8"},
			func(w *Tuning) {
				w.Warps = []tcwRule{{all: true, warps: 16}, {kind: "wo", warps: 32}, {kind: "", warps: 8}, {kind: "wo", warps: 8}}
			}, false},
		{"row tiles", map[string]string{"RIGSCOPE_CUDA_RT": "gate_up:v4, qkv,none"},
			func(w *Tuning) {
				w.RowTiles = map[string]rowTileRule{"gate_up": {tiles: 4, verifyOnly: true}, "qkv": {tiles: 2}}
			}, false},
		{"row tiles none", map[string]string{"RIGSCOPE_CUDA_RT": "none"}, func(w *Tuning) { w.RowTiles = map[string]rowTileRule{} }, false},
		{"prefill", map[string]string{"RIGSCOPE_CUDA_PREFILL": "bf16"}, func(w *Tuning) { w.Prefill = prefillBF16 }, false},
		{"prefill bf16fa", map[string]string{"RIGSCOPE_CUDA_PREFILL": "bf16fa"}, func(w *Tuning) { w.Prefill = prefillBF16FA }, false},
		{"prefill off", map[string]string{"RIGSCOPE_CUDA_PREFILL": "off"}, func(w *Tuning) { w.Prefill = prefillOff }, false},
		{"prefill cublas", map[string]string{"RIGSCOPE_CUDA_PREFILL": "cublas"}, func(w *Tuning) { w.Prefill = prefillCublas }, false},
		{"prefill cublasfa", map[string]string{"RIGSCOPE_CUDA_PREFILL": "cublasfa"}, func(w *Tuning) { w.Prefill = prefillCublasFA }, false},
		{"prefill unknown ignored", map[string]string{"RIGSCOPE_CUDA_PREFILL": "fp8"}, func(*Tuning) {}, false},
		{"row tiles malformed", map[string]string{"RIGSCOPE_CUDA_RT": "qkv:3"}, nil, true},
		{"kinds", map[string]string{"RIGSCOPE_CUDA_SKIP": "attention, wo", "RIGSCOPE_CUDA_NOP": "down"},
			func(w *Tuning) {
				w.Skip, w.Nop = map[string]bool{"attention": true, "wo": true}, map[string]bool{"down": true}
			}, false},
		{"kv default", map[string]string{"RIGSCOPE_CUDA_KV": ""}, func(w *Tuning) { w.KV = defaultKV }, false},
		{"kv bf16", map[string]string{"RIGSCOPE_CUDA_KV": "bf16"}, func(w *Tuning) { w.KV = kvBF16 }, false},
		{"kv f32", map[string]string{"RIGSCOPE_CUDA_KV": "f32"}, func(w *Tuning) { w.KV = kvF32 }, false},
		{"kv float32", map[string]string{"RIGSCOPE_CUDA_KV": "float32"}, func(w *Tuning) { w.KV = kvF32 }, false},
		{"kv unknown", map[string]string{"RIGSCOPE_CUDA_KV": "fp8"}, nil, true},
		{"ptx", map[string]string{"RIGSCOPE_CUDA_PTX": "carry/ptx/x.ptx"}, func(w *Tuning) { w.PTX = "carry/ptx/x.ptx" }, false},
		{"int8 tensor-core Q4_K", map[string]string{"RIGSCOPE_CUDA_MQM": "1"}, func(w *Tuning) { w.MQM = 4 }, false},
		{"int8 tensor-core Q4_K, 16 warps", map[string]string{"RIGSCOPE_CUDA_MQM": "16"}, func(w *Tuning) { w.MQM = 16 }, false},
		{"wide one-token variants", map[string]string{"RIGSCOPE_CUDA_MQW": "q4glu8"},
			func(w *Tuning) { w.MQW, _ = parseMQW("q4glu8", true) }, false},
		{"wide one-token variants none", map[string]string{"RIGSCOPE_CUDA_MQW": "none"}, func(w *Tuning) { w.MQW = mqwKnob{} }, false},
		{"wide one-token variant unknown", map[string]string{"RIGSCOPE_CUDA_MQW": "glu8"}, nil, true},
		{"mixed qkv a launch a part", map[string]string{"RIGSCOPE_CUDA_MQN2": "0"}, func(w *Tuning) { w.MQN2 = false }, false},
		{"mixed qkv not 0 stays one launch", map[string]string{"RIGSCOPE_CUDA_MQN2": "no"}, func(*Tuning) {}, false},
		{"L2 prefetch on", map[string]string{"RIGSCOPE_CUDA_L2PF": "1"}, func(w *Tuning) { w.L2Prefetch = true }, false},
		{"L2 prefetch not 1 stays off", map[string]string{"RIGSCOPE_CUDA_L2PF": "0"}, func(*Tuning) {}, false},
		{"one-token product variants", map[string]string{"RIGSCOPE_CUDA_MQV": "q6glu2"},
			func(w *Tuning) { w.MQV, _ = parseMQV("q6glu2", true) }, false},
		{"one-token product variant unknown", map[string]string{"RIGSCOPE_CUDA_MQV": "glu2"}, nil, true},
		{"int8 tensor-core Q4_K not 1 stays off", map[string]string{"RIGSCOPE_CUDA_MQM": "yes"}, func(*Tuning) {}, false},
		{"fp16 tensor-core products, 8 warps", map[string]string{"RIGSCOPE_CUDA_MH": "8"}, func(w *Tuning) { w.MH = 8 }, false},
		{"fp16 tensor-core products, 16 warps", map[string]string{"RIGSCOPE_CUDA_MH": "16"}, func(w *Tuning) { w.MH = 16 }, false},
		{"fp16 tensor-core products not 8 or 16 stay off", map[string]string{"RIGSCOPE_CUDA_MH": "4"}, func(*Tuning) {}, false},
		{"fp16 and int8 tensor-core products both", map[string]string{"RIGSCOPE_CUDA_MH": "8", "RIGSCOPE_CUDA_MQM": "8"}, nil, true},
		{"Q8_K tensor-core products, 8 warps", map[string]string{"RIGSCOPE_CUDA_MQK": "8"}, func(w *Tuning) { w.MQK = 8 }, false},
		{"Q8_K tensor-core products not 4, 8 or 16 stay off", map[string]string{"RIGSCOPE_CUDA_MQK": "2"}, func(*Tuning) {}, false},
		{"Q8_K products, a shape per matrix", map[string]string{"RIGSCOPE_CUDA_MQK": "auto"}, func(w *Tuning) { w.MQK = mqkAuto }, false},
		{"Q8_K auto and fp16 tensor-core products both", map[string]string{"RIGSCOPE_CUDA_MH": "8", "RIGSCOPE_CUDA_MQK": "auto"}, nil, true},
		{"Q8_K products' one-token dp4a twins off", map[string]string{"RIGSCOPE_CUDA_MQK1": "0"}, func(w *Tuning) { w.MQK1 = false }, false},
		{"Q8_K and fp16 tensor-core products both", map[string]string{"RIGSCOPE_CUDA_MH": "16", "RIGSCOPE_CUDA_MQK": "8"}, nil, true},
	}
	for _, c := range cases {
		got, err := ParseTuning(env(c.vars))
		if c.err {
			if err == nil {
				t.Errorf("%s: no error", c.name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		want := def
		want.Skip, want.Twice, want.Nop = map[string]bool{}, map[string]bool{}, map[string]bool{}
		c.want(&want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, want)
		}
	}
	if def.TensorCores != true || def.L2Prefetch || def.HeadOut || !def.HeadOutAuto || def.AttnRows != 4 || def.AttnMin != 32 || def.AttnChunk != 32 || def.AttnGroup != 4 || def.RowTiles != nil || def.Warps != nil {
		t.Errorf("defaults = %+v", def)
	}
}

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// The cache format sets the bytes per value and the kernel names.
func TestKVFormat(t *testing.T) {
	cases := []struct {
		f      kvFormat
		bytes  int
		kernel string
		name   string
	}{
		{kvF32, 4, "attn_128_2", "float32"},
		{kvBF16, 2, "attn_128_2_kb", "bf16"},
	}
	for _, c := range cases {
		if b, k, n := c.f.elemBytes(), c.f.kernel("attn_128_2"), c.f.String(); b != c.bytes || k != c.kernel || n != c.name {
			t.Errorf("%s: %d bytes, kernel %s, name %s; want %d, %s, %s", c.f, b, k, n, c.bytes, c.kernel, c.name)
		}
	}
}
