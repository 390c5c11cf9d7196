package model

import (
	"fmt"
	"math"

	"rigscope/engine/tensor"
)

// Scoring is how a mixture-of-experts router turns its logits into expert
// scores.
type Scoring uint8

const (
	// ScoreSoftmax: a softmax over every expert's logit (Mixtral,
	// Qwen3-MoE).
	ScoreSoftmax Scoring = iota
	// ScoreSigmoid: each expert's logit through a sigmoid on its own
	// (DeepSeek-V3).
	ScoreSigmoid
)

func (s Scoring) String() string {
	if s == ScoreSigmoid {
		return "sigmoid"
	}
	return "softmax"
}

// MoE is a sparse mixture-of-experts MLP's hyperparameters (Shazeer et al.
// 2017; Mixtral, Qwen3-MoE, DeepSeek-V3). The zero value (Experts 0) is a
// dense MLP in every layer.
//
// A token's router logits (Experts) are scored (Scoring); the PerToken
// experts of the largest scores (plus ScoreBias, for choosing only; within
// the TopKGroups best of Groups groups when grouped) are run, and their
// outputs summed weighted by their scores (renormalized to sum 1 with
// NormTopK, times RoutedScale), plus the shared expert's output.
type MoE struct {
	Experts  int     // routed experts in each MoE layer
	PerToken int     // experts each token is routed to (top-k)
	FFN      int     // hidden size of each routed expert's SiLU-gated MLP
	Scoring  Scoring // softmax or sigmoid
	NormTopK bool    // the chosen experts' weights are divided by their sum
	// ScoreBias: a per-expert bias (e_score_correction_bias, tensor
	// exp_probs_b) is added to the scores to choose experts, not to weigh
	// them (DeepSeek-V3).
	ScoreBias bool
	// Groups > 1: experts form Groups equal groups, a group scores the sum
	// of its two best experts, and only the TopKGroups best groups are
	// chosen from (DeepSeek-V3's n_group, topk_group).
	Groups, TopKGroups int
	RoutedScale        float32 // routed experts' weights are multiplied by it (routed_scaling_factor); 0 means 1
	SharedFFN          int     // hidden size of the shared expert every token runs (0: none)
	FirstDense         int     // layers [0, FirstDense) keep a dense MLP of Config.FFN (first_k_dense_replace)
}

// MaxExperts bounds the routed experts a file may state.
const MaxExperts = 1 << 12

// Enabled says whether the model has MoE layers.
func (m *MoE) Enabled() bool { return m.Experts > 0 }

// Sparse says whether layer l is an MoE layer.
func (m *MoE) Sparse(l int) bool { return m.Enabled() && l >= m.FirstDense }

func (m *MoE) String() string {
	s := fmt.Sprintf("%d experts, top %d, %s scores", m.Experts, m.PerToken, m.Scoring)
	if m.Groups > 1 {
		s += fmt.Sprintf(", top %d of %d groups", m.TopKGroups, m.Groups)
	}
	if m.SharedFFN > 0 {
		s += ", shared expert"
	}
	return s
}

// check refuses MoE parameters that contradict each other, naming each by
// config.json's name.
func (m *MoE) check(layers int) error {
	if !m.Enabled() {
		if m.Experts < 0 {
			return fmt.Errorf("experts %d is negative", m.Experts)
		}
		return nil
	}
	switch {
	case m.Experts > MaxExperts:
		return fmt.Errorf("%d experts is more than %d", m.Experts, MaxExperts)
	case m.PerToken < 1 || m.PerToken > m.Experts:
		return fmt.Errorf("num_experts_per_tok %d is not between 1 and the %d experts", m.PerToken, m.Experts)
	case m.FFN < 1 || m.FFN > MaxFFN:
		return fmt.Errorf("expert FFN size %d is not between 1 and %d", m.FFN, MaxFFN)
	case m.SharedFFN < 0 || m.SharedFFN > MaxFFN:
		return fmt.Errorf("shared expert FFN size %d is not between 0 and %d", m.SharedFFN, MaxFFN)
	case m.FirstDense < 0 || m.FirstDense > layers:
		return fmt.Errorf("first_k_dense_replace %d is not between 0 and the %d layers", m.FirstDense, layers)
	case !(m.RoutedScale >= 0 && m.RoutedScale <= 1e6):
		return fmt.Errorf("routed_scaling_factor %g is not between 0 and 1e6", m.RoutedScale)
	}
	if m.Groups > 1 {
		per := m.Experts / m.Groups
		switch {
		case m.Experts%m.Groups != 0:
			return fmt.Errorf("n_group %d does not divide the %d experts", m.Groups, m.Experts)
		case per < 2:
			return fmt.Errorf("n_group %d leaves fewer than 2 experts per group (a group scores its two best)", m.Groups)
		case m.TopKGroups < 1 || m.TopKGroups > m.Groups:
			return fmt.Errorf("topk_group %d is not between 1 and n_group %d", m.TopKGroups, m.Groups)
		case m.PerToken > m.TopKGroups*per:
			return fmt.Errorf("num_experts_per_tok %d is more than the %d experts of the topk_group %d groups", m.PerToken, m.TopKGroups*per, m.TopKGroups)
		}
	} else if m.Groups < 0 || m.TopKGroups < 0 {
		return fmt.Errorf("n_group %d / topk_group %d is negative", m.Groups, m.TopKGroups)
	}
	return nil
}

// Expert tensor parts (GGUF's names): each routed expert's gate, up and
// down, the router, the score bias, and the shared expert's.
const (
	PartRouter     = "ffn_gate_inp"   // (experts, dim)
	PartExpGate    = "ffn_gate_exps"  // per expert (ffn, dim)
	PartExpUp      = "ffn_up_exps"    // per expert (ffn, dim)
	PartExpDown    = "ffn_down_exps"  // per expert (dim, ffn)
	PartScoreBias  = "exp_probs_b"    // (experts), a .bias
	PartSharedGate = "ffn_gate_shexp" // (shared ffn, dim)
	PartSharedUp   = "ffn_up_shexp"
	PartSharedDown = "ffn_down_shexp"
)

// ExpertName is the canonical name of one routed expert's matrix, e.g.
// ExpertName(3, PartExpGate, 5) = "blk.3.ffn_gate_exps.5.weight". (A GGUF
// file stacks a layer's experts in one 3-D blk.3.ffn_gate_exps.weight;
// its loader serves expert e as this name.)
func ExpertName(layer int, part string, expert int) string {
	return fmt.Sprintf("blk.%d.%s.%d.weight", layer, part, expert)
}

// ExpectedMoEShapes adds to m the tensors of MoE layer l of c: router,
// score bias, each expert's gate/up/down and the shared expert's.
func ExpectedMoEShapes(c *Config, l int, m map[string][]int) {
	e := &c.MoE
	m[LayerName(l, PartRouter)] = []int{e.Experts, c.Dim}
	if e.ScoreBias {
		m[LayerBias(l, PartScoreBias)] = []int{e.Experts}
	}
	for x := range e.Experts {
		m[ExpertName(l, PartExpGate, x)] = []int{e.FFN, c.Dim}
		m[ExpertName(l, PartExpUp, x)] = []int{e.FFN, c.Dim}
		m[ExpertName(l, PartExpDown, x)] = []int{c.Dim, e.FFN}
	}
	if e.SharedFFN > 0 {
		m[LayerName(l, PartSharedGate)] = []int{e.SharedFFN, c.Dim}
		m[LayerName(l, PartSharedUp)] = []int{e.SharedFFN, c.Dim}
		m[LayerName(l, PartSharedDown)] = []int{c.Dim, e.SharedFFN}
	}
}

// route chooses one token's experts from its router logits (Experts):
// ids and weights (PerToken each), ids ascending. choice (Experts) and
// group (Groups) are scratch. As transformers computes it: scores =
// softmax or sigmoid of the logits; choice = scores + bias; with groups,
// a group's score is the sum of its two best choices and the experts
// outside the TopKGroups best groups get choice 0; the PerToken largest
// choices win (ties to the lower id); weights = their scores, divided by
// their sum with NormTopK, times RoutedScale.
func (m *MoE) route(ids []int32, weights, logits, bias, choice, group []float32) {
	scores := logits // scored in place
	if m.Scoring == ScoreSigmoid {
		for i, v := range scores {
			scores[i] = float32(1 / (1 + math.Exp(-float64(v))))
		}
	} else {
		softmaxExact(scores)
	}
	copy(choice, scores)
	for i := range bias {
		choice[i] += bias[i]
	}
	if m.Groups > 1 {
		per := m.Experts / m.Groups
		for g := range group {
			a, b := top2(choice[g*per : (g+1)*per])
			group[g] = a + b
		}
		// Mark the TopKGroups best groups +Inf (a sum of finite scores
		// never is), the lower index on ties; clear the others' choices.
		inf := float32(math.Inf(1))
		for range m.TopKGroups {
			best := -1
			for g, v := range group {
				if v != inf && (best < 0 || v > group[best]) {
					best = g
				}
			}
			group[best] = inf
		}
		for g, v := range group {
			if v != inf {
				clear(choice[g*per : (g+1)*per]) // masked_fill(~mask, 0.0), as transformers
			}
		}
	}
	// Top-k by repeated selection: the largest not yet taken, the lower id
	// on ties.
	k := len(ids)
	for j := range k {
		best := -1
		for i, v := range choice {
			if taken(ids[:j], i) {
				continue
			}
			if best < 0 || v > choice[best] {
				best = i
			}
		}
		ids[j] = int32(best)
	}
	sortIDs(ids)
	var sum float32
	for j, id := range ids {
		weights[j] = scores[id]
		sum += weights[j]
	}
	if m.NormTopK {
		if m.Scoring == ScoreSigmoid {
			sum += 1e-20
		}
		for j := range weights {
			weights[j] /= sum
		}
	}
	if m.RoutedScale != 0 && m.RoutedScale != 1 {
		for j := range weights {
			weights[j] *= m.RoutedScale
		}
	}
}

// softmaxExact is a softmax in float32 with the max subtracted, with
// math.Exp (the router's scores choose experts; a fast exp's last-bit
// differences could flip a near-tie).
func softmaxExact(x []float32) {
	m := x[0]
	for _, v := range x {
		m = max(m, v)
	}
	var sum float32
	for i, v := range x {
		x[i] = float32(math.Exp(float64(v - m)))
		sum += x[i]
	}
	for i := range x {
		x[i] /= sum
	}
}

// top2 is the two largest values of x (len >= 2).
func top2(x []float32) (a, b float32) {
	a, b = float32(math.Inf(-1)), float32(math.Inf(-1))
	for _, v := range x {
		if v > a {
			a, b = v, a
		} else if v > b {
			b = v
		}
	}
	return a, b
}

func taken(ids []int32, i int) bool {
	for _, id := range ids {
		if int(id) == i {
			return true
		}
	}
	return false
}

// sortIDs sorts a handful of ids ascending (insertion sort: no allocation).
func sortIDs(ids []int32) {
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
}

// MoELayer is one MoE layer's weights for this rank. Every expert is split
// by its FFN dimension like the dense MLP (each rank holds columns
// [FFNLo, FFNHi) of every expert), so every rank does the same share of
// work whichever experts the tokens choose, and the block ends in the one
// allreduce the dense MLP has. The router is replicated: each rank scores
// every token from the same (allreduced, bit-identical) activations and
// so chooses the same experts.
type MoELayer struct {
	Router    *tensor.Tensor   // (experts, dim) replicated
	ScoreBias []float32        // (experts) ScoreBias: added to the scores to choose; nil without
	Gate, Up  []*tensor.Tensor // per expert (fl, dim): this rank's rows (column-parallel)
	Down      []*tensor.Tensor // per expert (dim, fl): this rank's columns (row-parallel)
	FFNLo     int              // this rank's expert columns [FFNLo, FFNHi)
	FFNHi     int

	// The shared expert (SharedFFN > 0), split like the dense MLP; nil
	// without.
	SharedGate, SharedUp *tensor.Tensor // (sl, dim)
	SharedDown           *tensor.Tensor // (dim, sl)
	SharedLo, SharedHi   int
}

// bytes is the weight memory of the layer's router and experts (no
// allocation: Runner.MicroBatch counts it every pass).
func (m *MoELayer) bytes() int64 {
	n := tensorBytes(m.Router) + tensorBytes(m.SharedGate) + tensorBytes(m.SharedUp) + tensorBytes(m.SharedDown)
	for e := range m.Gate {
		n += tensorBytes(m.Gate[e]) + tensorBytes(m.Up[e]) + tensorBytes(m.Down[e])
	}
	return n
}

// tensorBytes is t's storage size (0 for nil).
func tensorBytes(t *tensor.Tensor) int64 {
	if t == nil {
		return 0
	}
	b, _ := t.DType.Bytes(t.Elems())
	return int64(b)
}

// ffnSplit is rank r of tp's columns [lo, hi) of an n-wide FFN, on bs-element
// block boundaries (the last rank takes the rest).
func ffnSplit(n, r, tp, bs int, what string) (lo, hi int, err error) {
	lo, hi = alignDown(n*r/tp, bs), alignDown(n*(r+1)/tp, bs)
	if r == tp-1 {
		hi = n
	}
	if hi <= lo {
		return 0, 0, fmt.Errorf("model: %s size %d is too small to split %d ways in %d-element blocks", what, n, tp, bs)
	}
	return lo, hi, nil
}

// shardOf is rows [lo, hi) (column-parallel) or columns (row-parallel) of t;
// t itself for one rank.
func shardOf(t *tensor.Tensor, tp int, rows bool, lo, hi int) (*tensor.Tensor, error) {
	if tp == 1 {
		return t, nil
	}
	var s *tensor.Tensor
	var err error
	if rows {
		s, err = t.SliceRows(lo, hi)
	} else {
		s, err = t.SliceCols(lo, hi)
	}
	if err != nil {
		return nil, fmt.Errorf("model: sharding for TP=%d: %w", tp, err)
	}
	return s, nil
}

// loadMoE takes layer l's router, experts and shared expert, this rank's
// share of each.
func loadMoE(cfg *Config, l int, sh Shard, get func(string, ...int) (*tensor.Tensor, error), vec func(string, int) ([]float32, error)) (*MoELayer, error) {
	e := &cfg.MoE
	m := &MoELayer{}
	var err error
	if m.Router, err = get(LayerName(l, PartRouter), e.Experts, cfg.Dim); err != nil {
		return nil, err
	}
	if e.ScoreBias {
		if m.ScoreBias, err = vec(LayerBias(l, PartScoreBias), e.Experts); err != nil {
			return nil, err
		}
	}
	m.Gate = make([]*tensor.Tensor, e.Experts)
	m.Up = make([]*tensor.Tensor, e.Experts)
	m.Down = make([]*tensor.Tensor, e.Experts)
	for x := range e.Experts {
		gate, err := get(ExpertName(l, PartExpGate, x), e.FFN, cfg.Dim)
		if err != nil {
			return nil, err
		}
		up, err := get(ExpertName(l, PartExpUp, x), e.FFN, cfg.Dim)
		if err != nil {
			return nil, err
		}
		down, err := get(ExpertName(l, PartExpDown, x), cfg.Dim, e.FFN)
		if err != nil {
			return nil, err
		}
		if x == 0 {
			if m.FFNLo, m.FFNHi, err = ffnSplit(e.FFN, sh.Rank, sh.Size, down.DType.BlockSize(), "expert FFN"); err != nil {
				return nil, err
			}
		}
		if m.Gate[x], err = shardOf(gate, sh.Size, true, m.FFNLo, m.FFNHi); err != nil {
			return nil, err
		}
		if m.Up[x], err = shardOf(up, sh.Size, true, m.FFNLo, m.FFNHi); err != nil {
			return nil, err
		}
		if m.Down[x], err = shardOf(down, sh.Size, false, m.FFNLo, m.FFNHi); err != nil {
			return nil, err
		}
	}
	if e.SharedFFN == 0 {
		return m, nil
	}
	gate, err := get(LayerName(l, PartSharedGate), e.SharedFFN, cfg.Dim)
	if err != nil {
		return nil, err
	}
	up, err := get(LayerName(l, PartSharedUp), e.SharedFFN, cfg.Dim)
	if err != nil {
		return nil, err
	}
	down, err := get(LayerName(l, PartSharedDown), cfg.Dim, e.SharedFFN)
	if err != nil {
		return nil, err
	}
	if m.SharedLo, m.SharedHi, err = ffnSplit(e.SharedFFN, sh.Rank, sh.Size, down.DType.BlockSize(), "shared expert FFN"); err != nil {
		return nil, err
	}
	if m.SharedGate, err = shardOf(gate, sh.Size, true, m.SharedLo, m.SharedHi); err != nil {
		return nil, err
	}
	if m.SharedUp, err = shardOf(up, sh.Size, true, m.SharedLo, m.SharedHi); err != nil {
		return nil, err
	}
	if m.SharedDown, err = shardOf(down, sh.Size, false, m.SharedLo, m.SharedHi); err != nil {
		return nil, err
	}
	return m, nil
}

// ActiveBytes is the weight memory this rank reads for one decode token:
// Bytes less, in each MoE layer, the routed experts the token is not sent
// to (experts are of equal size, so any PerToken of them), the bound a
// decode step's bandwidth is measured against.
func (w *Weights) ActiveBytes() int64 {
	n := w.Bytes()
	m := &w.Cfg.MoE
	for i := range w.Layers {
		L := w.Layers[i].MoE
		if L == nil || len(L.Gate) == 0 {
			continue
		}
		per := tensorBytes(L.Gate[0]) + tensorBytes(L.Up[0]) + tensorBytes(L.Down[0])
		n -= int64(m.Experts-m.PerToken) * per
	}
	return n
}
