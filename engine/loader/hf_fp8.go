package loader

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"rigscope/engine/hfconfig"
	"rigscope/engine/loader/safetensors"
	"rigscope/engine/tensor"
)

// FP8 checkpoints (quantization_config quant_method fp8, hfconfig.FP8)
// store each projection weight NAME.weight as F8_E4M3 beside its float32
// scales: NAME.weight_scale, one per tensor (shape [] or [1]) or one per
// output row ([rows] or [rows, 1]), or, with weight_block_size,
// NAME.weight_scale_inv, one per 128x128 block ([ceil(rows/128),
// ceil(cols/128)]). A static activation scheme adds NAME.input_scale,
// which is read past: activations stay float32.

// fp8ScaleSuffixes are the scale tensors' suffixes a file of q has.
func fp8ScaleSuffixes(q *hfconfig.FP8) []string {
	s := []string{".weight_scale"}
	if q.BlockRows > 0 {
		s[0] += "_inv"
	}
	if q.StaticActivations {
		s = append(s, ".input_scale")
	}
	return s
}

// hfFP8Weight is F8_E4M3 weight hfName of m with its scales attached.
func hfFP8Weight(m *safetensors.Model, q *hfconfig.FP8, hfName string) (*tensor.Tensor, error) {
	if q == nil {
		return nil, fmt.Errorf("tensor %q is F8_E4M3, but config.json has no quantization_config of quant_method fp8 to say where its scales are", hfName)
	}
	t, err := m.FP8Tensor(hfName)
	if err != nil {
		return nil, err
	}
	base, ok := strings.CutSuffix(hfName, ".weight")
	if !ok || len(t.Shape) != 2 {
		return nil, fmt.Errorf("tensor %q: F8_E4M3 %v: only 2-D .weight matrices are read as FP8", hfName, t.Shape)
	}
	rows, cols := t.Shape[0], t.Shape[1]
	name := base + fp8ScaleSuffixes(q)[0]
	shape, values, err := scaleValues(m, name)
	if err != nil {
		return nil, fmt.Errorf("FP8 weight %q: %w", hfName, err)
	}
	var br, bc int
	switch {
	case q.BlockRows > 0:
		br, bc = q.BlockRows, q.BlockCols
		if want := []int{(rows + br - 1) / br, (cols + bc - 1) / bc}; !slices.Equal(shape, want) {
			return nil, fmt.Errorf("FP8 weight %q %v: scale tensor %q has shape %v, want %v for %dx%d blocks", hfName, t.Shape, name, shape, want, br, bc)
		}
	case len(values) == 1 && (len(shape) == 0 || slices.Equal(shape, []int{1})):
		br, bc = rows, cols // per tensor
	case slices.Equal(shape, []int{rows}) || slices.Equal(shape, []int{rows, 1}):
		br, bc = 1, cols // per output row
	default:
		return nil, fmt.Errorf("FP8 weight %q %v: scale tensor %q has shape %v; implemented: per-tensor ([] or [1]), per-channel ([%d] or [%d, 1]), or 128x128 blocks with weight_block_size", hfName, t.Shape, name, shape, rows, rows)
	}
	if t.Scales, err = tensor.NewScales(rows, cols, br, bc, values); err != nil {
		return nil, fmt.Errorf("FP8 weight %q: scale tensor %q: %w; the file is corrupt", hfName, name, err)
	}
	return t, nil
}

// scaleValues reads a scale tensor (F32, BF16 or F16) as float32.
func scaleValues(m *safetensors.Model, name string) ([]int, []float32, error) {
	if !m.Has(name) {
		return nil, nil, fmt.Errorf("no scale tensor %q", name)
	}
	ti, data, err := m.Raw(name)
	if err != nil {
		return nil, nil, err
	}
	size := map[string]int{"F32": 4, "BF16": 2, "F16": 2}[ti.FileDType]
	if size == 0 {
		return nil, nil, fmt.Errorf("scale tensor %q has dtype %s (F32, BF16 or F16 are read)", name, ti.FileDType)
	}
	v := make([]float32, len(data)/size)
	for i := range v {
		switch ti.FileDType {
		case "F32":
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		case "BF16":
			v[i] = tensor.BF16ToF32(binary.LittleEndian.Uint16(data[2*i:]))
		case "F16":
			v[i] = tensor.F16ToF32(binary.LittleEndian.Uint16(data[2*i:]))
		}
	}
	return ti.Shape, v, nil
}

// dropFP8Scales drops from unread the scale tensors of FP8 weights that
// are read (in names, not in unread); with no FP8 config it keeps them,
// and they are refused as quantization tensors.
func dropFP8Scales(q *hfconfig.FP8, names, unread []string) []string {
	if q == nil {
		return unread
	}
	out := unread[:0:0]
	for _, n := range unread {
		drop := false
		for _, suf := range fp8ScaleSuffixes(q) {
			if base, ok := strings.CutSuffix(n, suf); ok {
				w := base + ".weight"
				_, found := slices.BinarySearch(names, w)
				drop = found && !slices.Contains(unread, w)
			}
		}
		if !drop {
			out = append(out, n)
		}
	}
	return out
}
