package loader

import (
	"fmt"
	"regexp"
	"strconv"

	"rigscope/engine/loader/gguf"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// ggufExpertRe matches a canonical per-expert name (model.ExpertName).
var ggufExpertRe = regexp.MustCompile(`^(blk\.\d+\.ffn_(?:gate|up|down)_exps)\.(\d+)\.weight$`)

// ggufStacked is the GGUF tensor that holds a canonical per-expert matrix
// (llama.cpp stacks a layer's experts: blk.N.ffn_gate_exps.weight, shape
// (experts, rows, cols)), and the expert's index.
func ggufStacked(canonical string) (stacked string, expert int, ok bool) {
	m := ggufExpertRe.FindStringSubmatch(canonical)
	if m == nil {
		return "", 0, false
	}
	e, err := strconv.Atoi(m[2])
	if err != nil {
		return "", 0, false
	}
	return m[1] + ".weight", e, true
}

// ggufExpertLookup serves canonical per-expert names from f's stacked
// expert tensors (a view of expert e's rows, no copy) and every other name
// from f itself.
func ggufExpertLookup(f *gguf.File, cfg model.Config) func(string) (*tensor.Tensor, error) {
	return func(name string) (*tensor.Tensor, error) {
		stacked, e, ok := ggufStacked(name)
		if !ok {
			return f.Tensor(name)
		}
		t, err := f.Tensor(stacked)
		if err != nil {
			return nil, err
		}
		if len(t.Shape) != 3 || t.Shape[0] != cfg.MoE.Experts || e >= t.Shape[0] {
			return nil, fmt.Errorf("tensor %q: shape %v, want (%d experts, rows, cols)", stacked, t.Shape, cfg.MoE.Experts)
		}
		rows, cols := t.Shape[1], t.Shape[2]
		per := rows * t.RowBytes()
		return &tensor.Tensor{Name: fmt.Sprintf("%s[%d]", stacked, e), DType: t.DType, Shape: []int{rows, cols},
			Data: t.Data[e*per : (e+1)*per : (e+1)*per]}, nil
	}
}

// ggufReadStacked adds to read the stacked tensors that hold its
// per-expert names.
func ggufReadStacked(read map[string][]int) {
	for name := range read {
		if stacked, _, ok := ggufStacked(name); ok {
			read[stacked] = nil
		}
	}
}
