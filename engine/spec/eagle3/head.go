package eagle3

import (
	"encoding/binary"
	"fmt"
	"math"

	"rigscope/engine/loader/safetensors"
	"rigscope/engine/loader/unsupported"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// Head is a loaded EAGLE-3 head: its config, its weights (aliasing the
// mapped file), and the embedding it shares with the target. dim = Cfg.Dim,
// td = Cfg.TargetDim, hd = Cfg.HeadDim, H = Cfg.Heads, KVH = Cfg.KVHeads.
type Head struct {
	Cfg  Config
	Path string

	Embed      *tensor.Tensor // (vocab, dim) the target's token embedding, or the head's own
	OwnEmbed   bool           // Embed came from the head's file
	FC         *tensor.Tensor // (dim, 3*td) fuses the three target features
	InputNorm  []float32      // (dim) on the token embedding
	HiddenNorm []float32      // (dim) on the hidden input
	Wq         *tensor.Tensor // (H*hd, 2*dim) reads cat(embedding, hidden)
	Wk, Wv     *tensor.Tensor // (KVH*hd, 2*dim)
	Wo         *tensor.Tensor // (dim, H*hd)
	PostNorm   []float32      // (dim) post_attention_layernorm
	Gate, Up   *tensor.Tensor // (ffn, dim)
	Down       *tensor.Tensor // (dim, ffn)
	OutNorm    []float32      // (dim) norm before lm_head
	LMHead     *tensor.Tensor // (draftVocab, dim)
	// DraftToTarget[d] is the target id of draft id d (d + d2t[d]).
	DraftToTarget []int32 // (draftVocab)

	st   *safetensors.Model
	read map[string]bool // the file's tensors load has found
}

// Tensor names, with the prefixes different exporters use.
var (
	layerPrefixes = []string{"midlayer.", "model.midlayer.", "layers.0.", "model.layers.0."}
	topPrefixes   = []string{"", "model."}
)

// Load opens the head in dir and checks it against the target (its config
// and token embedding come from target; loader.Source satisfies
// model.WeightSource). The head's weights stay mapped until Close.
func Load(dir string, target model.WeightSource) (*Head, error) {
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	st, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("eagle3: %s: %w", dir, err)
	}
	h := &Head{Cfg: cfg, Path: dir, st: st, read: map[string]bool{}}
	if err := h.load(target); err != nil {
		st.Close()
		return nil, fmt.Errorf("eagle3: %s: %w", dir, err)
	}
	return h, nil
}

// Close releases the mapped file.
func (h *Head) Close() error {
	if h.st == nil {
		return nil
	}
	err := h.st.Close()
	h.st = nil
	return err
}

// find returns the first of the candidate names the file holds.
func (h *Head) find(prefixes []string, name string) (string, bool) {
	for _, p := range prefixes {
		if h.st.Has(p + name) {
			h.read[p+name] = true
			return p + name, true
		}
	}
	return prefixes[0] + name, false
}

func (h *Head) matrix(prefixes []string, name string, rows, cols int) (*tensor.Tensor, error) {
	full, ok := h.find(prefixes, name)
	if !ok {
		return nil, fmt.Errorf("no tensor %q", full)
	}
	t, err := h.st.Tensor(full)
	if err != nil {
		return nil, err
	}
	shape := []int{rows}
	if cols > 0 {
		shape = append(shape, cols)
	}
	if err := t.ExpectShape(shape...); err != nil {
		return nil, err
	}
	if err := cpu.Supported(t.DType); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", full, err)
	}
	return t, nil
}

func (h *Head) vector(prefixes []string, name string, n int) ([]float32, error) {
	t, err := h.matrix(prefixes, name, n, 0)
	if err != nil {
		return nil, err
	}
	v := make([]float32, n)
	cpu.DequantRow(v, t, 0)
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("tensor %q (%v %v): element %d is %g; the file is corrupt", t.Name, t.DType, t.Shape, i, x)
		}
	}
	return v, nil
}

func (h *Head) load(target model.WeightSource) error {
	c := &h.Cfg
	tc := target.Config()
	embName, own := h.find(topPrefixes, "embed_tokens.weight")
	if err := c.Resolve(tc, own); err != nil {
		return err
	}
	var err error
	if own {
		if h.Embed, err = h.matrix(topPrefixes, "embed_tokens.weight", c.Vocab, c.Dim); err != nil {
			return err
		}
		h.OwnEmbed = true
	} else {
		if h.Embed, err = target.Tensor(model.NameTokEmbd); err != nil {
			return fmt.Errorf("the head has no %s, and the target's embedding: %w", embName, err)
		}
		if err := h.Embed.ExpectShape(tc.Vocab, tc.Dim); err != nil {
			return fmt.Errorf("the target's embedding: %w", err)
		}
		if err := cpu.Supported(h.Embed.DType); err != nil {
			return fmt.Errorf("the target's embedding: %w", err)
		}
	}
	dim, hd := c.Dim, c.HeadDim
	mats := []struct {
		dst        **tensor.Tensor
		pre        []string
		name       string
		rows, cols int
	}{
		{&h.FC, topPrefixes, "fc.weight", dim, NumAux * c.TargetDim},
		{&h.Wq, layerPrefixes, "self_attn.q_proj.weight", c.Heads * hd, 2 * dim},
		{&h.Wk, layerPrefixes, "self_attn.k_proj.weight", c.KVHeads * hd, 2 * dim},
		{&h.Wv, layerPrefixes, "self_attn.v_proj.weight", c.KVHeads * hd, 2 * dim},
		{&h.Wo, layerPrefixes, "self_attn.o_proj.weight", dim, c.Heads * hd},
		{&h.Gate, layerPrefixes, "mlp.gate_proj.weight", c.FFN, dim},
		{&h.Up, layerPrefixes, "mlp.up_proj.weight", c.FFN, dim},
		{&h.Down, layerPrefixes, "mlp.down_proj.weight", dim, c.FFN},
		{&h.LMHead, []string{""}, "lm_head.weight", c.DraftVocab, dim},
	}
	for _, m := range mats {
		if *m.dst, err = h.matrix(m.pre, m.name, m.rows, m.cols); err != nil {
			if m.name == "fc.weight" {
				if info, ok := h.st.Info(m.pre[0] + m.name); ok && len(info.Shape) == 2 && info.Shape[1]%c.TargetDim == 0 && info.Shape[1] != NumAux*c.TargetDim {
					return fmt.Errorf("fc.weight %v fuses %d target features of width %d; EAGLE-3 fuses %d (%s)", info.Shape, info.Shape[1]/c.TargetDim, c.TargetDim, NumAux, c.AuxFrom)
				}
			}
			return err
		}
	}
	vecs := []struct {
		dst  *[]float32
		pre  []string
		name string
	}{
		{&h.InputNorm, layerPrefixes, "input_layernorm.weight"},
		{&h.HiddenNorm, layerPrefixes, "hidden_norm.weight"},
		{&h.PostNorm, layerPrefixes, "post_attention_layernorm.weight"},
		{&h.OutNorm, topPrefixes, "norm.weight"},
	}
	for _, v := range vecs {
		if *v.dst, err = h.vector(v.pre, v.name, dim); err != nil {
			return err
		}
	}
	if err := h.loadVocabMap(); err != nil {
		return err
	}
	return h.checkUnread()
}

// checkUnread refuses a head whose file holds tensors load did not read
// (biases, norms or layers the head's forward pass would skip).
func (h *Head) checkUnread() error {
	var unread []string
	for _, n := range h.st.Names() {
		if !h.read[n] {
			unread = append(unread, n)
		}
	}
	return unsupported.Refuse("", unsupported.Tensors(unread))
}

// loadVocabMap reads d2t (draft id d -> target id d + d2t[d]) and checks
// it against t2d (true at the target ids in the draft vocabulary) when the
// file has one.
func (h *Head) loadVocabMap() error {
	c := &h.Cfg
	h.DraftToTarget = make([]int32, c.DraftVocab)
	name, ok := h.find(topPrefixes, "d2t")
	if !ok {
		if c.DraftVocab != c.Vocab {
			return fmt.Errorf("no tensor %q: a draft vocabulary of %d (draft_vocab_size) needs d2t to map it to the target's %d", name, c.DraftVocab, c.Vocab)
		}
		for d := range h.DraftToTarget {
			h.DraftToTarget[d] = int32(d)
		}
		return nil
	}
	off, err := readInts(h.st, name, c.DraftVocab)
	if err != nil {
		return err
	}
	seen := make([]int32, c.Vocab) // draft id + 1 per target id
	for d, o := range off {
		t := int64(d) + o
		if t < 0 || t >= int64(c.Vocab) {
			return fmt.Errorf("d2t[%d] = %d maps draft id %d to target id %d, outside the target vocabulary [0, %d)", d, o, d, t, c.Vocab)
		}
		if seen[t] != 0 {
			return fmt.Errorf("d2t maps draft ids %d and %d to the same target id %d", seen[t]-1, d, t)
		}
		seen[t] = int32(d) + 1
		h.DraftToTarget[d] = int32(t)
	}
	name, ok = h.find(topPrefixes, "t2d")
	if !ok {
		return nil
	}
	info, raw, err := h.st.Raw(name)
	if err != nil {
		return err
	}
	if info.FileDType != "BOOL" && info.FileDType != "U8" || len(info.Shape) != 1 || info.Shape[0] != c.Vocab || len(raw) != c.Vocab {
		return fmt.Errorf("tensor %q: %s %v, want BOOL [%d]", name, info.FileDType, info.Shape, c.Vocab)
	}
	for t, b := range raw {
		if in := seen[t] != 0; in != (b != 0) {
			return fmt.Errorf("t2d[%d] = %v disagrees with d2t (target id %d is %s the draft vocabulary by d2t)", t, b != 0, t, map[bool]string{true: "in", false: "not in"}[in])
		}
	}
	return nil
}

// readInts reads a 1-D integer tensor (I64 or I32) of n elements.
func readInts(st *safetensors.Model, name string, n int) ([]int64, error) {
	info, raw, err := st.Raw(name)
	if err != nil {
		return nil, err
	}
	if len(info.Shape) != 1 || info.Shape[0] != n {
		return nil, fmt.Errorf("tensor %q: shape %v, want [%d] (draft_vocab_size)", name, info.Shape, n)
	}
	out := make([]int64, n)
	switch info.FileDType {
	case "I64":
		if len(raw) != 8*n {
			return nil, fmt.Errorf("tensor %q: %d bytes for %d int64", name, len(raw), n)
		}
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
		}
	case "I32":
		if len(raw) != 4*n {
			return nil, fmt.Errorf("tensor %q: %d bytes for %d int32", name, len(raw), n)
		}
		for i := range out {
			out[i] = int64(int32(binary.LittleEndian.Uint32(raw[4*i:])))
		}
	default:
		return nil, fmt.Errorf("tensor %q: dtype %s, want I64 or I32", name, info.FileDType)
	}
	return out, nil
}

// FeatureLayers returns the target layers the head reads, in fusion order.
func (h *Head) FeatureLayers() []int { return h.Cfg.AuxLayers }
