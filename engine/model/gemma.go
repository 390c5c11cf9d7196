package model

import (
	"fmt"
	"math"

	"rigscope/engine/tensor/cpu"
)

// Gemma3 is what Gemma 3 (Gemma Team 2025) changes in the Llama block; the
// zero value is none of it. A Gemma 3 layer is
//
//	h = x + PostAttnNorm(Attention(AttnNorm(x)))
//	y = h + PostFFNNorm(Down(gelu_tanh(Gate(FFNNorm(h))) * Up(FFNNorm(h))))
//
// with the embedding scaled by sqrt(dim), RMSNorm on each query and key
// head (Config.QKNorm), attention scores scaled by 1/sqrt(QueryScale), and
// local layers (a sliding window of Config.SlidingWindow positions, their
// own RoPE base) interleaved with global ones (the whole context,
// Config.RopeTheta and Config.RopeScaling).
//
// Every norm weight the model holds is the multiplier itself: Gemma's
// RMSNorm multiplies by (1 + w), and the loaders store 1 + w (llama.cpp's
// converter writes 1 + w into GGUF; the Hugging Face reader adds the 1).
type Gemma3 struct {
	On bool
	// QueryScale is query_pre_attn_scalar: q·k is scaled by
	// 1/sqrt(QueryScale) rather than 1/sqrt(head dim).
	QueryScale float32
	// Layers has one byte per layer: LayerLocal (sliding window) or
	// LayerGlobal (a string, so that a Config stays comparable).
	Layers string
	// LocalRopeTheta and LocalRopeScaling are the local layers' RoPE
	// (rope_local_base_freq, or rope_parameters.sliding_attention).
	LocalRopeTheta   float32
	LocalRopeScaling RopeScaling
	// FinalSoftcap > 0 caps the logits: cap * tanh(logits / cap)
	// (final_logit_softcapping); 0: none.
	FinalSoftcap float32
}

// IsLocal says whether layer l of a Gemma 3 model is a sliding-window
// layer (false for any other model).
func (g *Gemma3) IsLocal(l int) bool { return g.On && l < len(g.Layers) && g.Layers[l] == LayerLocal }

// Gemma 3's layer kinds (Gemma3.Layers).
const (
	LayerLocal  = 'L'
	LayerGlobal = 'G'
)

func (g *Gemma3) extensions() []string {
	if !g.On {
		return nil
	}
	ext := []string{
		"Gemma 3 block (embedding scale, (1+w) post-attention and post-MLP norms, GELU-tanh MLP)",
		fmt.Sprintf("query_pre_attn_scalar %g", g.QueryScale),
		fmt.Sprintf("interleaved local/global layers (local RoPE base %g)", g.LocalRopeTheta),
	}
	if g.LocalRopeScaling.Type != RopeScaleNone {
		ext = append(ext, "local-layer RoPE scaling "+g.LocalRopeScaling.String())
	}
	if g.FinalSoftcap > 0 {
		ext = append(ext, fmt.Sprintf("final logit soft-capping %g", g.FinalSoftcap))
	}
	return ext
}

// check refuses a Gemma 3 config whose fields contradict each other or
// the block (a Gemma field set on another model, a layer list of the wrong
// length, local layers without a window).
func (g *Gemma3) check(c *Config) error {
	if !g.On {
		if g.QueryScale != 0 || g.Layers != "" || g.LocalRopeTheta != 0 || g.LocalRopeScaling.Type != RopeScaleNone || g.FinalSoftcap != 0 {
			return fmt.Errorf("Gemma 3 fields set on a %q model that is not Gemma 3", c.Arch)
		}
		return nil
	}
	switch {
	case !(g.QueryScale > 0 && g.QueryScale <= 1e6):
		return fmt.Errorf("query_pre_attn_scalar %g is not a number above 0 and at most 1e6", g.QueryScale)
	case len(g.Layers) != c.Layers:
		return fmt.Errorf("Gemma 3 layer types list %d layers, the model has %d", len(g.Layers), c.Layers)
	case !c.QKNorm:
		return fmt.Errorf("Gemma 3 without q/k head norms")
	case !(g.FinalSoftcap >= 0 && g.FinalSoftcap <= 1e6):
		return fmt.Errorf("final_logit_softcapping %g is not a number between 0 (none) and 1e6", g.FinalSoftcap)
	case c.MoE.Enabled() || c.MLA.Enabled():
		return fmt.Errorf("Gemma 3 with mixture of experts or latent attention is not implemented (no Gemma 3 checkpoint has them)")
	}
	for i := range len(g.Layers) {
		switch k := g.Layers[i]; {
		case k != LayerLocal && k != LayerGlobal:
			return fmt.Errorf("Gemma 3 layer %d of kind %q: want %q (local) or %q (global)", i, k, LayerLocal, LayerGlobal)
		case k == LayerLocal && c.SlidingWindow <= 0:
			return fmt.Errorf("Gemma 3 local (sliding-window) layers without a sliding window")
		}
	}
	if err := CheckRopeTheta(float64(g.LocalRopeTheta)); err != nil {
		return fmt.Errorf("local layers: %w", err)
	}
	if g.LocalRopeScaling.Type == RopeScaleFreqs {
		return fmt.Errorf("local layers: a %s is global-layer only", NameRopeFreqs)
	}
	if err := g.LocalRopeScaling.Check(); err != nil {
		return fmt.Errorf("local layers: %w", err)
	}
	return nil
}

// LocalPattern is the Gemma 3 layer list (Gemma3.Layers) of a model of
// layers layers in which every period-th layer is global and the others
// local (Hugging Face's sliding_window_pattern: layer i is local unless
// (i+1) % period == 0; llama.cpp's gemma3 uses period 6).
func LocalPattern(layers, period int) (string, error) {
	if period < 1 {
		return "", fmt.Errorf("sliding window pattern %d: want 1 (every layer global) or more", period)
	}
	b := make([]byte, layers)
	for i := range b {
		b[i] = LayerLocal
		if (i+1)%period == 0 {
			b[i] = LayerGlobal
		}
	}
	return string(b), nil
}

// Gemma 3's tensor parts beyond the Llama block (LayerName).
const (
	PartPostAttnNorm = "post_attention_norm" // (dim) norm of the attention output
	PartPostFFNNorm  = "post_ffw_norm"       // (dim) norm of the MLP output
)

// loadGemmaLayer reads layer i's post-attention and post-MLP norms.
func loadGemmaLayer(L *Layer, i int, cfg Config, vec func(string, int) ([]float32, error)) error {
	if !cfg.Gemma.On {
		return nil
	}
	var err error
	if L.PostAttnNorm, err = vec(LayerName(i, PartPostAttnNorm), cfg.Dim); err != nil {
		return err
	}
	L.PostFFNNorm, err = vec(LayerName(i, PartPostFFNNorm), cfg.Dim)
	return err
}

// Row-wise steps of Gemma 3 (rowStep hands them to gemmaRowStep).
const (
	rowPostAttnNorm rowOp = 64 + iota // o = RMSNorm(o) with the layer's post-attention norm
	rowPostFFNNorm                    // o = RMSNorm(o) with the layer's post-MLP norm
	rowGeGLU                          // gate = gelu_tanh(gate) * up
)

func (r *Runner) gemmaRowStep(t0, t1 int) {
	s, c, w := &r.s, r.W.Cfg, r.W
	dim := c.Dim
	switch s.op {
	case rowPostAttnNorm:
		o := s.o[t0*dim : t1*dim]
		cpu.RMSNorm(o, o, s.layer.PostAttnNorm, c.NormEps)
	case rowPostFFNNorm:
		o := s.o[t0*dim : t1*dim]
		cpu.RMSNorm(o, o, s.layer.PostFFNNorm, c.NormEps)
	case rowGeGLU:
		fl := w.FFNHi - w.FFNLo
		geglu(s.gate[t0*fl:t1*fl], s.up[t0*fl:t1*fl])
	default:
		panic(fmt.Sprintf("model: row step %d", s.op)) // a programming error: every op is listed
	}
}

// postAttnNorm and postFFNNorm apply Gemma 3's output norms to o (T, dim),
// after the allreduce (every rank holds the whole sum); no-ops otherwise.
func (r *Runner) postAttnNorm(T int) {
	if r.s.layer.PostAttnNorm != nil {
		r.rowwise(T, rowPostAttnNorm)
	}
}

func (r *Runner) postFFNNorm(T int) {
	if r.s.layer.PostFFNNorm != nil {
		r.rowwise(T, rowPostFFNNorm)
	}
}

// geglu: gate = gelu_tanh(gate) * up, with PyTorch's tanh approximation
// (gelu_pytorch_tanh): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
func geglu(gate, up []float32) {
	up = up[:len(gate)]
	const k = 0.7978845608028654 // √(2/π)
	for i, x := range gate {
		x64 := float64(x)
		g := 0.5 * x64 * (1 + math.Tanh(k*(x64+0.044715*x64*x64*x64)))
		gate[i] = float32(g) * up[i]
	}
}

// softcapLogits caps the columns [lo, hi) of rows rows of logits (rows,
// vocab) at c: c * tanh(logit / c); a no-op for c 0.
func softcapLogits(logits []float32, rows, vocab, lo, hi int, c float32) {
	if c == 0 {
		return
	}
	cap := float64(c)
	for i := range rows {
		row := logits[i*vocab+lo : i*vocab+hi]
		for j, v := range row {
			row[j] = float32(cap * math.Tanh(float64(v)/cap))
		}
	}
}
