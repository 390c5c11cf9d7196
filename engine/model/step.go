package model

import (
	"fmt"
	"math"
)

// The decoder, once, for every device. Step is the model definition: it
// says which operations a forward pass of T tokens runs, in which order;
// Ops is what a device implements to run it. The CPU's Runner executes
// each operation eagerly (step_cpu.go); gpu/cuda's Target enqueues its
// fused kernels for each on the ranks' streams and captures the whole
// step into a CUDA graph. So a new block variant is written here once, and
// each device either implements the operation it needs or refuses it by
// name.
//
// Notation: x (T, dim) is the residual stream; hl, kvl are the rank's
// query and key-value heads, hd the head dim, fl the rank's FFN columns.
// The operations are coarse, at the granularity a GPU fuses (a norm goes
// into the product that reads it, an allreduce into the residual add that
// follows it), and refer to weights by (layer, role): each device keeps
// its own layouts, kernels and buffers. Σ_ranks is the sum over the
// tensor-parallel ranks (the allreduce): a row-parallel product's partial
// sums are joined inside the operation that adds them to x, so each
// device joins them its own way (the CPU through its AllReducer, the GPU
// through its step's comm kernels). Every other activation is the rank's
// own.

// Ops is one device's operations on the step in hand: the device holds
// the batch (tokens, RoPE positions, causal or tree mask, cache length)
// and every buffer; the operations name only the layer and the token
// count T. An operation returns an error for bad input or a device
// failure, and a device refuses by name what it does not implement.
type Ops interface {
	// Embed starts the residual stream:
	//	x[t] = scale · E[token_t]                          x (T, dim)
	// scale is 1, or Gemma 3's √dim rounded to float32.
	Embed(T int, scale float32) error

	// AttentionInput is layer l's query, key and value products, the
	// attention norm fused in:
	//	q = RMSNorm(x; attn_norm_l) · Wq_lᵀ               q (T, hl·hd)
	//	k = RMSNorm(x; attn_norm_l) · Wk_lᵀ               k (T, kvl·hd)
	//	v = RMSNorm(x; attn_norm_l) · Wv_lᵀ               v (T, kvl·hd)
	AttentionInput(l, T int) error

	// Attend is layer l's attention of q over the cache:
	//	q, k, v += bq_l, bk_l, bv_l                     (Qwen2 biases)
	//	q_h, k_h = RMSNorm(q_h; qn_l), RMSNorm(k_h; kn_l)  (per head: Qwen3, Gemma 3)
	//	q, k = RoPE_l(q, pos), RoPE_l(k, pos)
	//	K_l[len+t], V_l[len+t] = k[t], v[t]             (the cache)
	//	att[t,h] = softmax(scale_l · q[t,h]·K_lᵀ + M[t]) · V_l   att (T, hl·hd)
	// with the layer's RoPE table, score scale and sliding window
	// (LayerAttentions), and M the batch's mask: a key is visible when it
	// is in the cached prefix or an earlier token of a chain (a tree
	// node's ancestor), itself included, and within the window.
	Attend(l, T int) error

	// LatentAttention is layer l's multi-head latent attention (MLA.go's
	// formulas) from RMSNorm(x; attn_norm_l), its latents appended to the
	// cache, in place of AttentionInput and Attend:  att (T, hl·v).
	LatentAttention(l, T int) error

	// AddProduct adds a row-parallel product to the residual stream:
	//	x += PostNorm_{l,role}(Σ_ranks in · W_{l,role}ᵀ)   x (T, dim)
	// role RoleAttnOut: in = att, W = Wo_l, PostNorm = Gemma 3's
	// post-attention norm; role RoleDown: in = h, W = Down_l, PostNorm =
	// Gemma 3's post-MLP norm; without those norms PostNorm is the
	// identity. The sum over ranks is inside: the norm is of the whole sum.
	AddProduct(l int, role Role, T int) error

	// GatedMLP is layer l's gated MLP input, the FFN norm fused in:
	//	h = act(RMSNorm(x; ffn_norm_l) · Gate_lᵀ) ⊙ (RMSNorm(x; ffn_norm_l) · Up_lᵀ)   h (T, fl)
	GatedMLP(l, T int, act Activation) error

	// MixtureOfExperts is layer l's whole MoE MLP (moe_forward.go), in
	// place of GatedMLP and AddProduct(l, RoleDown):
	//	x += Σ_ranks MoE_l(RMSNorm(x; ffn_norm_l))
	MixtureOfExperts(l, T int) error

	// Capture copies x (T, dim) out when layer l is one whose output the
	// caller asked for (EAGLE-3's features); a no-op otherwise.
	Capture(l, T int) error

	// Logits is the output projection of rows [first, first+rows) of x,
	// each rank its vocab rows:
	//	logits[i] = softcap(RMSNorm(x[first+i]; out_norm) · Outᵀ)   (rows, vocab)
	//	softcap(z) = c · tanh(z / c) for c > 0; z for c = 0
	// A device may also reduce each row to its argmax there (the GPU
	// does, for ForwardIDs).
	Logits(first, rows int, softcap float32) error
}

// Role names a row-parallel product of a layer (AddProduct).
type Role uint8

const (
	RoleAttnOut Role = iota // Wo: the attention heads' output projection
	RoleDown                // Down: the MLP's output projection
)

func (r Role) String() string {
	switch r {
	case RoleAttnOut:
		return "attention output"
	case RoleDown:
		return "MLP down"
	}
	return fmt.Sprintf("role %d", uint8(r))
}

// Activation is the gated MLP's activation.
type Activation uint8

const (
	ActSiLU     Activation = iota // silu(z) = z·σ(z) (Llama, Qwen, Mistral)
	ActGELUTanh                   // gelu_tanh(z) = ½z(1 + tanh(√(2/π)(z + 0.044715z³))) (Gemma 3)
)

// MLPActivation is c's gated-MLP activation.
func (c *Config) MLPActivation() Activation {
	if c.Gemma.On {
		return ActGELUTanh
	}
	return ActSiLU
}

// EmbedScale is what c's embedded tokens are multiplied by: Gemma 3's
// √dim rounded to float32 (as transformers does), else 1.
func (c *Config) EmbedScale() float32 {
	if c.Gemma.On {
		return float32(math.Sqrt(float64(c.Dim)))
	}
	return 1
}

// Step runs one forward pass of the decoder described by c over the T
// tokens the device o holds, logits for the rows mode asks for:
//
//	x = embed(tokens)                                    x (T, dim)
//	per layer l:
//	  x += PostAttnNorm(Σ_ranks Attention(AttnNorm(x)) · Woᵀ)
//	  x += PostFFNNorm(Σ_ranks MLP(FFNNorm(x)) · Downᵀ)
//	logits = softcap(OutNorm(x) · Outᵀ)                  (rows, vocab)
func Step(o Ops, c *Config, T int, mode LogitsMode) error {
	if err := o.Embed(T, c.EmbedScale()); err != nil { // x (T, dim)
		return err
	}
	if err := Layers(o, c, T); err != nil { // x (T, dim)
		return err
	}
	first, rows, ok := LogitRows(mode, T)
	if !ok {
		return nil
	}
	return o.Logits(first, rows, c.Gemma.FinalSoftcap) // (rows, vocab)
}

// Layers runs c's decoder layers on the residual stream x (T, dim) the
// device holds: Step less the embedding and the output projection. A
// drafter whose stream does not start at a token embedding runs its
// layers through it: EAGLE-3's head is a one-layer model whose x starts
// at the fused target features and whose AttentionInput reads
// cat(input_norm(embed(token)), hidden_norm(x)) (engine/spec/eagle3).
func Layers(o Ops, c *Config, T int) error {
	act := c.MLPActivation()
	for l := range c.Layers {
		// Attention block.
		if c.MLA.Enabled() {
			if err := o.LatentAttention(l, T); err != nil { // att (T, hl·v)
				return err
			}
		} else {
			if err := o.AttentionInput(l, T); err != nil { // q (T, hl·hd), k, v (T, kvl·hd)
				return err
			}
			if err := o.Attend(l, T); err != nil { // att (T, hl·hd)
				return err
			}
		}
		if err := o.AddProduct(l, RoleAttnOut, T); err != nil { // x (T, dim)
			return err
		}
		// MLP block.
		if c.MoE.Sparse(l) {
			if err := o.MixtureOfExperts(l, T); err != nil { // x (T, dim)
				return err
			}
		} else {
			if err := o.GatedMLP(l, T, act); err != nil { // h (T, fl)
				return err
			}
			if err := o.AddProduct(l, RoleDown, T); err != nil { // x (T, dim)
				return err
			}
		}
		if err := o.Capture(l, T); err != nil { // EAGLE-3: x after layer l
			return err
		}
	}
	return nil
}

// LogitRows is the rows of a batch of T tokens mode asks logits for:
// [first, first+rows); ok false for none.
func LogitRows(mode LogitsMode, T int) (first, rows int, ok bool) {
	switch mode {
	case LogitsLast:
		return T - 1, 1, true
	case LogitsAll:
		return 0, T, true
	}
	return 0, 0, false
}
