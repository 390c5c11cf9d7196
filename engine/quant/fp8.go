package quant

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"rigscope/engine/loader/safetensors"
	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
)

// FP8Scheme is a scale layout of FP8 checkpoints (hfconfig.FP8).
type FP8Scheme int

const (
	FP8PerTensor  FP8Scheme = iota // NAME.weight_scale, shape [] (vLLM / RedHat "FP8", activation_scheme static)
	FP8PerChannel                  // NAME.weight_scale, shape [rows, 1]
	FP8Block128                    // NAME.weight_scale_inv, [ceil(rows/128), ceil(cols/128)] (DeepSeek-V3, Qwen3 FP8)
)

// FP8Schemes are every scheme, named.
var FP8Schemes = []struct {
	Name   string
	Scheme FP8Scheme
}{{"per-tensor", FP8PerTensor}, {"per-channel", FP8PerChannel}, {"block-128", FP8Block128}}

// fp8Projection: the weights FP8 releases quantize (the embeddings, norms
// and lm_head stay as they are).
var fp8Projection = regexp.MustCompile(`^model\.layers\.\d+\.(self_attn|mlp)\.\w+_proj\.weight$`)

// WriteFP8 writes into dst (a folder, created) the single-file Hugging
// Face checkpoint at src with every projection weight quantized to e4m3
// in scheme s as the FP8 releases lay it out (tensor.QuantizeFP8: scale
// amax/448 per block), config.json with its quantization_config, and the
// tokenizer and generation files linked. For tests and checks: it holds
// the whole model in memory.
func WriteFP8(src, dst string, s FP8Scheme) error {
	f, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	if err != nil {
		return err
	}
	defer f.Close()
	var out []*tensor.Tensor
	for _, ti := range f.Tensors {
		w, err := f.Tensor(ti.Name)
		if err != nil {
			return err
		}
		if !fp8Projection.MatchString(ti.Name) || len(w.Shape) != 2 {
			out = append(out, w)
			continue
		}
		rows, cols := w.Rows(), w.Cols()
		vals := make([]float32, rows*cols)
		for r := range rows {
			cpu.DequantRow(vals[r*cols:(r+1)*cols], w, r)
		}
		br, bc, suffix, shape := rows, cols, ".weight_scale", []int{}
		switch s {
		case FP8PerChannel:
			br, shape = 1, []int{rows, 1}
		case FP8Block128:
			br, bc, suffix = 128, 128, ".weight_scale_inv"
			shape = []int{(rows + 127) / 128, (cols + 127) / 128}
		}
		q, err := tensor.QuantizeFP8(ti.Name, rows, cols, vals, br, bc)
		if err != nil {
			return err
		}
		sc := &tensor.Tensor{Name: strings.TrimSuffix(ti.Name, ".weight") + suffix, DType: tensor.F32, Shape: shape, Data: make([]byte, 4*len(q.Scales.Values))}
		for i, v := range q.Scales.Values {
			binary.LittleEndian.PutUint32(sc.Data[4*i:], math.Float32bits(v))
		}
		out = append(out, q, sc)
	}
	cfgRaw, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(cfgRaw, &cfg); err != nil {
		return fmt.Errorf("%s/config.json: %w", src, err)
	}
	qc := map[string]any{"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic"}
	switch s {
	case FP8PerTensor:
		qc["activation_scheme"] = "static" // without its input_scale tensors: the engine does not read them
	case FP8Block128:
		qc["weight_block_size"] = []int{128, 128}
	}
	cfg["quantization_config"] = qc
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(filepath.Join(dst, "config.json"), b, 0o644); err != nil {
		return err
	}
	mf, err := os.Create(filepath.Join(dst, "model.safetensors"))
	if err != nil {
		return err
	}
	if err := safetensors.Write(mf, out, nil); err != nil {
		mf.Close()
		return err
	}
	if err := mf.Close(); err != nil {
		return err
	}
	for _, name := range []string{"tokenizer.json", "tokenizer.model", "tokenizer_config.json", "generation_config.json"} {
		p, err := filepath.Abs(filepath.Join(src, name))
		if err != nil {
			return err
		}
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if err := os.Symlink(p, filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	return nil
}
