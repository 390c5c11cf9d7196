package loader

import (
	"fmt"
	"math"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/model"
)

// ggufGemmaRead are the gemma3.* keys the Gemma 3 reader reads.
var ggufGemmaRead = map[string]bool{
	"attention.sliding_window": true, "attention.sliding_window_pattern": true,
	"rope.freq_base_swa": true, "final_logit_softcapping": true,
}

// llama.cpp's gemma3 values for what the file does not state.
const (
	ggufGemmaPattern    = 6     // every 6th layer global (llama_hparams::set_swa_pattern(6))
	ggufGemmaLocalTheta = 10000 // rope_freq_base_train_swa
	ggufGemma27BLayers  = 62    // the layer count llama.cpp reads as Gemma 3 27B
)

// ggufGemma completes cfg with Gemma 3's metadata as llama.cpp reads a
// gemma3 file (llama-model.cpp, LLM_ARCH_GEMMA3):
//   - ARCH.attention.sliding_window: the local layers' window; absent or
//     0, every layer is global;
//   - which layers are local: ARCH.attention.sliding_window_pattern when
//     stated (one bool per layer, true = local, or a period n: layer i is
//     local unless i % n == n-1), else llama.cpp's fixed period of 6.
//     llama.cpp's converter does not write the key for gemma3, so a model
//     trained with other layer types than every 6th global (the fixture
//     tiny-gemma3) runs from GGUF as llama.cpp runs it, not as trained;
//   - ARCH.rope.freq_base_swa: the local layers' RoPE base (10000);
//     ARCH.rope.freq_base and any rope.scaling.* are the global layers';
//   - query_pre_attn_scalar is not stored: llama.cpp scales scores by
//     1/sqrt(head dim), and by 1/sqrt(embedding_length / head_count) for
//     the 62-layer model (Gemma 3 27B, whose query_pre_attn_scalar is 168);
//   - ARCH.final_logit_softcapping when stated.
//
// Norm weights in the file are 1 + w already (the converter adds the 1).
func ggufGemma(f *gguf.File, arch string, cfg *model.Config, flt func(string, float32, func(float64) error) float32) []error {
	var errs []error
	g := model.Gemma3{On: true, QueryScale: float32(cfg.HeadDim)}
	if cfg.Layers == ggufGemma27BLayers && cfg.Heads > 0 {
		g.QueryScale = float32(cfg.Dim / cfg.Heads)
	}
	g.LocalRopeTheta = flt("rope.freq_base_swa", ggufGemmaLocalTheta, model.CheckRopeTheta)
	g.FinalSoftcap = flt("final_logit_softcapping", 0, func(v float64) error {
		if !(v >= 0 && v <= 1e6) {
			return fmt.Errorf("%g is not a number between 0 (none) and 1e6", v)
		}
		return nil
	})
	key := arch + ".attention.sliding_window"
	if v, stated := f.Get(key); stated {
		n, ok := f.Uint(key)
		if !ok || n > math.MaxInt32 {
			errs = append(errs, fmt.Errorf("%s = %v is not a non-negative integer", key, v))
		}
		cfg.SlidingWindow = int(n)
	}
	layers, err := ggufGemmaLayers(f, arch, cfg.Layers)
	if err != nil {
		errs = append(errs, err)
	}
	if cfg.SlidingWindow == 0 { // no window: every layer global (llama.cpp's LLAMA_SWA_TYPE_NONE)
		layers, _ = model.LocalPattern(cfg.Layers, 1)
	}
	g.Layers = layers
	cfg.Gemma = g
	return errs
}

// ggufGemmaLayers is the layer list (model.Gemma3.Layers) that
// ARCH.attention.sliding_window_pattern states, or llama.cpp's period 6.
func ggufGemmaLayers(f *gguf.File, arch string, layers int) (string, error) {
	key := arch + ".attention.sliding_window_pattern"
	v, stated := f.Get(key)
	if !stated {
		return model.LocalPattern(layers, ggufGemmaPattern)
	}
	if local, ok := v.([]bool); ok {
		if len(local) != layers {
			return "", fmt.Errorf("%s lists %d layers, %s.block_count is %d", key, len(local), arch, layers)
		}
		kinds := make([]byte, layers)
		for i, l := range local {
			kinds[i] = model.LayerGlobal
			if l {
				kinds[i] = model.LayerLocal
			}
		}
		return string(kinds), nil
	}
	n, ok := f.Uint(key)
	if !ok || n > math.MaxInt32 {
		return "", fmt.Errorf("%s = %v is neither one bool per layer nor a period", key, valueString(v))
	}
	s, err := model.LocalPattern(layers, int(n))
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	return s, nil
}
