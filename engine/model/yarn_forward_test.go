package model_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"rigscope/engine/model"
	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// edited is a weight source with its config replaced and its query
// weights (attn_q, or latent attention's attn_q_b) multiplied by qScale
// (1: untouched).
type edited struct {
	model.WeightSource
	cfg    model.Config
	qScale float32
}

func (e edited) Config() model.Config { return e.cfg }

func (e edited) Tensor(name string) (*tensor.Tensor, error) {
	t, err := e.WeightSource.Tensor(name)
	if err != nil || e.qScale == 1 || !strings.HasSuffix(name, ".attn_q.weight") && !strings.HasSuffix(name, "."+model.PartQB+".weight") {
		return t, err
	}
	if t.DType != tensor.F32 {
		panic("edited: attn_q is not F32")
	}
	v := make([]float32, t.Elems())
	for r := range t.Rows() {
		cpu.DequantRow(v[r*t.Cols():(r+1)*t.Cols()], t, r)
	}
	for i := range v {
		v[i] *= e.qScale
	}
	out := &tensor.Tensor{Name: t.Name, DType: tensor.F32, Shape: t.Shape, Data: make([]byte, 4*len(v))}
	tensor.Encode(out.Data, tensor.F32, v)
	return out, nil
}

func lastLogits(t *testing.T, src model.WeightSource) []float32 {
	t.Helper()
	r := newRunner(t, src)
	logits := make([]float32, src.Config().Vocab)
	if err := r.Forward(context.Background(), model.Batch{Tokens: prompt}, logits); err != nil {
		t.Fatal(err)
	}
	return logits
}

// YaRN against plain RoPE on the tiny preset (head dim 16): with factor 1
// it is plain RoPE bit for bit; with a ramp that keeps every pair (betas
// of 0.05 and 0.01 rotations put the ramp at pairs 8 to 10, past the last
// pair, 7) it is plain RoPE with cos and sin multiplied by the attention
// factor a, that is q·k by a², which scaling the query weights by a²
// also gives.
func TestYaRNForward(t *testing.T) {
	src := tinySource(t, "tiny")
	plainCfg := src.Config()
	plain := lastLogits(t, src)

	one := plainCfg
	one.RopeScaling = model.RopeScaling{Type: model.RopeScaleYaRN, Factor: 1, OrigContext: 4096, BetaFast: 32, BetaSlow: 1, AttnFactor: model.YaRNAttentionFactor(1, 0, 0, 0)}
	if i := firstBitDiff(lastLogits(t, edited{src, one, 1}), plain); i >= 0 {
		t.Errorf("yarn factor 1: logit %d differs from plain RoPE's", i)
	}

	const a = 1.3
	kept := plainCfg
	kept.RopeScaling = model.RopeScaling{Type: model.RopeScaleYaRN, Factor: 4, OrigContext: 4096, BetaFast: 0.05, BetaSlow: 0.01, AttnFactor: a}
	if d := kept.RopeScaling.Divisors(kept.RopeTheta, kept.HeadDim); d[len(d)-1] != 1 {
		t.Fatalf("divisors %v: want every pair kept", d)
	}
	got := lastLogits(t, edited{src, kept, 1})
	want := lastLogits(t, edited{src, plainCfg, a * a})
	if d := maxDiff(got, want); d > 1e-4 {
		t.Errorf("yarn attention factor %g: logits differ from q scaled by %g by %g", a, a*a, d)
	}
	if d := maxDiff(got, plain); d < 1e-3 {
		t.Errorf("yarn attention factor %g changed the logits by only %g", a, d)
	}
}

// YaRN with latent attention on the tiny-mla preset (rope dim 8): with
// factor 1 it is plain RoPE bit for bit; with a ramp that keeps every pair
// and DeepSeek's mscale = mscale_all_dim (attention factor 1) only the
// softmax scale changes, by mscale(factor, mscale_all_dim)², which
// scaling the queries (attn_q_b: nope and rope dims alike) by it also
// gives.
func TestYaRNLatentForward(t *testing.T) {
	src := tinySource(t, "synthetic:tiny-mla")
	plainCfg := src.Config()
	plain := lastLogits(t, src)

	one := plainCfg
	one.RopeScaling = model.RopeScaling{Type: model.RopeScaleYaRN, Factor: 1, OrigContext: 4096, BetaFast: 32, BetaSlow: 1, AttnFactor: 1, MScaleAllDim: 1}
	if i := firstBitDiff(lastLogits(t, edited{src, one, 1}), plain); i >= 0 {
		t.Errorf("yarn factor 1: logit %d differs from plain RoPE's", i)
	}

	kept := plainCfg
	kept.RopeScaling = model.RopeScaling{Type: model.RopeScaleYaRN, Factor: 4, OrigContext: 4096, BetaFast: 0.05, BetaSlow: 0.01, AttnFactor: 1, MScaleAllDim: 1}
	if d := kept.RopeScaling.Divisors(kept.RopeTheta, kept.HeadDim); d[len(d)-1] != 1 {
		t.Fatalf("divisors %v: want every pair kept", d)
	}
	m := 0.1*math.Log(4) + 1
	got := lastLogits(t, edited{src, kept, 1})
	want := lastLogits(t, edited{src, plainCfg, float32(m * m)})
	if d := maxDiff(got, want); d > 1e-4 {
		t.Errorf("yarn mscale %g: logits differ from q scaled by %g by %g", m, m*m, d)
	}
	if d := maxDiff(got, plain); d < 1e-3 {
		t.Errorf("yarn mscale %g changed the logits by only %g", m, d)
	}
}

// Gemma 3's final soft-cap: each logit becomes cap·tanh(logit/cap).
func TestGemmaSoftcap(t *testing.T) {
	src := openArch(t, "arch/tiny-gemma3-hf")
	plain := lastLogits(t, src)
	capped := src.Config()
	capped.Gemma.FinalSoftcap = 5
	got := lastLogits(t, edited{src, capped, 1})
	for i := range got {
		if want := float32(5 * math.Tanh(float64(plain[i])/5)); got[i] != want {
			t.Fatalf("logit %d: %g, want 5·tanh(%g/5) = %g", i, got[i], plain[i], want)
		}
	}
}
