//go:build cuda

package cuda

import (
	"fmt"
	"strings"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/model"
	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// The architectures' extensions of the Llama block that the GPU runs
// (arch_refuse.go lists them), all inside the attention kernel
// (kernels/attention.cu), with no launch of their own:
//   - RoPE scaling of every kind the CPU implements: the cos/sin tables
//     are the CPU's own (model.LayerAttentions, cpu.RopeTable), uploaded;
//     YaRN's attention factor is in the layer's score scale, as on the CPU.
//   - Q/K/V biases (Qwen2): added as attention loads q, k and v from the
//     qkv product (the bias has the qkv row's layout), so the products'
//     kernels stay as they are.
//   - Per-head q/k RMSNorm (Qwen3): 1/rms of each query and key row of a
//     block first, then applied as the rows are rotated.
//   - Sliding windows (Mistral): a key more than window-1 positions before
//     the query is masked, and the splits cover only the cached slots some
//     query of the step can see; the cache stays full-length.

// dattn is one layer's attention geometry on the device (LayerAttention).
type dattn struct {
	cs, sn cu.DevicePtr // (maxPos, hd/2) float32 RoPE tables, shared by layers with the same table
	window int          // > 0: sliding window
	scale  float32      // q·k factor
}

// archWeights are what a rank's model holds beyond the Llama block's
// matrices and norms: the RoPE divisors (per model, as model.Weights has
// them) for the tables.
type archWeights struct {
	ropeDiv, localRopeDiv []float32 // (hd/2) or nil
}

// uploadArch copies layer L's biases and q/k head norms into D (each 0
// when the model has none).
func (m *dmodel) uploadArch(L *model.Layer, D *dlayer) error {
	var err error
	if L.Bq != nil {
		b := append(append(append(make([]float32, 0, len(L.Bq)+2*len(L.Bk)), L.Bq...), L.Bk...), L.Bv...)
		if D.bias, err = m.uploadVec(b); err != nil {
			return fmt.Errorf("cuda: q/k/v biases: %w", err)
		}
	}
	if L.QNorm != nil {
		if D.qkNorm, err = m.uploadVec(append(append([]float32(nil), L.QNorm...), L.KNorm...)); err != nil {
			return fmt.Errorf("cuda: q/k head norms: %w", err)
		}
	}
	if L.PostAttnNorm != nil {
		if D.postAttn, err = m.uploadVec(L.PostAttnNorm); err != nil {
			return fmt.Errorf("cuda: post-attention norm: %w", err)
		}
		if D.postFFN, err = m.uploadVec(L.PostFFNNorm); err != nil {
			return fmt.Errorf("cuda: post-MLP norm: %w", err)
		}
	}
	return nil
}

// syntheticArch gives a synthetic shard the biases and q/k norms its
// config asks for (from vec: n random floats) and the divisors its RoPE
// scaling computes; a scaling read from a file's tensor has none to
// compute, and is refused.
func (m *dmodel) syntheticArch(cfg model.Config, sh shardDims, vec func(n int) (cu.DevicePtr, error)) error {
	hd := cfg.HeadDim
	if cfg.RopeScaling.Type == model.RopeScaleFreqs {
		return fmt.Errorf("cuda: a synthetic model cannot have %s RoPE scaling (it comes from a file's tensor)", cfg.RopeScaling.Type)
	}
	m.arch = archWeights{
		ropeDiv:      cfg.RopeScaling.Divisors(cfg.RopeTheta, hd),
		localRopeDiv: cfg.Gemma.LocalRopeScaling.Divisors(cfg.Gemma.LocalRopeTheta, hd),
	}
	for i := range m.layers {
		D := &m.layers[i]
		var err error
		if cfg.QKVBias {
			if D.bias, err = vec((sh.hq + 2*sh.hk) * hd); err != nil {
				return err
			}
		}
		if cfg.QKNorm {
			if D.qkNorm, err = vec(2 * hd); err != nil {
				return err
			}
		}
		if cfg.Gemma.On {
			if D.postAttn, err = vec(cfg.Dim); err != nil {
				return err
			}
			if D.postFFN, err = vec(cfg.Dim); err != nil {
				return err
			}
		}
	}
	return nil
}

// uploadAttention makes every layer's dattn for positions [0, maxPos):
// the CPU's tables for the model m (rank 0's: every rank has the same),
// one device copy per distinct table, allocated with alloc.
func uploadAttention(m *dmodel, maxPos int, alloc func(int64) cu.DevicePtr) ([]dattn, error) {
	w := &model.Weights{Cfg: m.cfg, RopeDivisors: m.arch.ropeDiv, LocalRopeDivisors: m.arch.localRopeDiv}
	geo := model.LayerAttentions(w, maxPos-64)
	up := map[*cpu.RopeTable]dattn{}
	out := make([]dattn, len(geo))
	for l, g := range geo {
		d, ok := up[g.Rope]
		if !ok {
			half := m.cfg.HeadDim / 2
			d.cs, d.sn = alloc(4*int64(maxPos*half)), alloc(4*int64(maxPos*half))
			if d.cs == 0 || d.sn == 0 {
				return nil, fmt.Errorf("cuda: RoPE tables of layer %d: allocation failed", l)
			}
			c, s := g.Rope.Tables(maxPos)
			if len(c) != maxPos*half {
				return nil, fmt.Errorf("cuda: RoPE table of layer %d covers %d positions, want %d", l, len(c)/half, maxPos)
			}
			if err := uploadTables(d.cs, d.sn, c, s); err != nil {
				return nil, err
			}
			up[g.Rope] = d
		}
		d.window, d.scale = g.Window, g.Scale
		out[l] = d
	}
	return out, nil
}

func uploadTables(cs, sn cu.DevicePtr, c, s []float32) error {
	if err := cu.MemcpyHtoD(cs, unsafe.Pointer(&c[0]), int64(4*len(c))); err != nil {
		return fmt.Errorf("cuda: upload rope table: %w", err)
	}
	if err := cu.MemcpyHtoD(sn, unsafe.Pointer(&s[0]), int64(4*len(s))); err != nil {
		return fmt.Errorf("cuda: upload rope table: %w", err)
	}
	return nil
}

// colsMultiple is what a matrix's columns must be a multiple of for the
// kernels that read it: Q8_0's 32-weight blocks, the tensor cores' 16-wide
// k tiles, else the elements one lane loads (16 bytes: WBF16::E etc. in
// kernels.cu). A TP shard's FFN columns need not be a multiple of 32 (the
// arch fixtures' 352 split in two is 176).
func colsMultiple(dt tensor.DType, tiled bool) int {
	switch {
	case dt == tensor.Q8_0:
		return 32
	case tiled:
		return 16
	case dt == tensor.F32:
		return 4
	}
	return 8
}

// attnKernel is the attention kernel attnLaunch named (attn_HD_RPW) for
// layer L with geometry a: its attnx_ twin when the layer has biases,
// head norms or a window, which attn_ ignores (attention.cu).
func attnKernel(name string, L *dlayer, a *dattn) string {
	if L.bias == 0 && L.qkNorm == 0 && a.window == 0 {
		return name
	}
	return "attnx" + strings.TrimPrefix(name, "attn")
}

// scaleEmbedding multiplies rank R's embedded tokens by s (Gemma 3's
// sqrt(dim) as a float32: model.Config.EmbedScale); a no-op for s 1.
func (t *Target) scaleEmbedding(R *rankState, T int, s float32) error {
	if s == 1 {
		return nil
	}
	n := T * t.cfg.Dim
	return t.kernel("embed_scale", 0, "scale_inplace", [3]int{(n + 255) / 256, 1, 1}, [3]int{256, 1, 1}, ptr(R.x), f32(s), i64(n))
}

// postNorm adds rmsnorm(R.part) * w to rank R's residual stream x (Gemma
// 3's post-attention and post-MLP norms: the product wrote its output to
// R.part); a no-op for w 0, and at TP > 1, where R.part holds a partial
// sum (joinRanks norms the whole sum).
func (t *Target) postNorm(R *rankState, w cu.DevicePtr, T int) error {
	if w == 0 || len(t.ranks) > 1 {
		return nil
	}
	return t.kernel("post_norm", 0, "add_rmsnorm", [3]int{T, 1, 1}, [3]int{256, 1, 1},
		ptr(R.x), ptr(R.part), ptr(w), i32(t.cfg.Dim), f32(t.eps), i32(0))
}

// joinRanks is allreduce call call of a TP > 1 step (x += the ranks'
// partial sums R.part). With a post-norm w (Gemma 3: the same on every
// rank) the norm is of the whole sum: the allreduce adds the sums into
// each rank's zeroed t.postSum[r] instead of x (R.x is pointed there while
// the allreduce's kernels are enqueued: every backend adds into R.x), and
// add_rmsnorm then adds its norm to x and zeroes postSum again.
func (t *Target) joinRanks(T, call int, w cu.DevicePtr) error {
	if w == 0 {
		return t.allReduceAdd(T, call)
	}
	if len(t.postSum) != len(t.ranks) {
		return fmt.Errorf("cuda: post-norm sums for %d ranks, have %d", len(t.ranks), len(t.postSum))
	}
	swap := func() {
		for r, R := range t.ranks {
			R.x, t.postSum[r] = t.postSum[r], R.x
		}
	}
	swap()
	err := t.allReduceAdd(T, call)
	swap()
	if err != nil {
		return err
	}
	return t.onRanks(func(R *rankState) error {
		return t.kernel("post_norm", 0, "add_rmsnorm", [3]int{T, 1, 1}, [3]int{256, 1, 1},
			ptr(R.x), ptr(t.postSum[R.r]), ptr(w), i32(t.cfg.Dim), f32(t.eps), i32(1))
	})
}

// allocPostSums gives every rank of a TP > 1 Gemma 3 target its zeroed
// (MaxTokens, dim) sum buffer for joinRanks.
func (t *Target) allocPostSums() error {
	if len(t.ranks) < 2 || !t.cfg.Gemma.On {
		return nil
	}
	n := int64(MaxTokens * t.cfg.Dim)
	for r, R := range t.ranks {
		var err error
		p := t.allocOn(R.rd, &err)(4 * n) // on the rank's GPU
		if err != nil {
			return fmt.Errorf("cuda: post-norm sum of rank %d: %w", r, err)
		}
		if err := t.in(R.rd, func() error { return cu.MemsetD32(p, 0, n) }); err != nil {
			return fmt.Errorf("cuda: post-norm sum of rank %d: %w", r, err)
		}
		t.postSum = append(t.postSum, p)
	}
	return nil
}
