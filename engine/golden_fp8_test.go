package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"rigscope/engine/loader/safetensors"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
	"rigscope/engine/tensor/cpu"
	"rigscope/internal/fixtures"
)

// fp8Scheme is one way FP8 checkpoints lay out their scales.
type fp8Scheme struct {
	name                 string
	blockRows, blockCols int            // 0: the matrix's rows or cols
	quant                map[string]any // config.json's quantization_config
	scaleShape           func(rows, cols int) []int
	suffix               string
}

var fp8Schemes = []fp8Scheme{
	{"per-tensor", 0, 0, map[string]any{"quant_method": "fp8", "activation_scheme": "static"},
		func(int, int) []int { return []int{} }, ".weight_scale"},
	{"per-channel", 1, 0, map[string]any{"quant_method": "fp8", "activation_scheme": "dynamic"},
		func(rows, _ int) []int { return []int{rows, 1} }, ".weight_scale"},
	{"block-128", 128, 128, map[string]any{"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": []int{128, 128}},
		func(rows, cols int) []int { return []int{(rows + 127) / 128, (cols + 127) / 128} }, ".weight_scale_inv"},
}

var fp8Projection = regexp.MustCompile(`^model\.layers\.\d+\.(self_attn|mlp)\.\w+_proj\.weight$`)

// writeFP8Checkpoint writes into a new folder the HF checkpoint at src with
// every projection weight quantized to e4m3 in scheme s (the embeddings,
// norms and lm_head stay as they are, as the FP8 releases keep them), and,
// when twin is set, a second folder whose projections are float32 holding
// exactly the dequantized FP8 values (the oracle of exact FP8 execution).
func writeFP8Checkpoint(t *testing.T, src string, s fp8Scheme, corrupt func(scale *tensor.Tensor)) (fp8Dir, twinDir string) {
	t.Helper()
	f, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var quant, twin []*tensor.Tensor
	for _, ti := range f.Tensors {
		w, err := f.Tensor(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !fp8Projection.MatchString(ti.Name) {
			quant, twin = append(quant, w), append(twin, w)
			continue
		}
		rows, cols := w.Rows(), w.Cols()
		vals := make([]float32, rows*cols)
		for r := range rows {
			cpu.DequantRow(vals[r*cols:(r+1)*cols], w, r)
		}
		br, bc := s.blockRows, s.blockCols
		if br == 0 {
			br = rows
		}
		if bc == 0 {
			bc = cols
		}
		q, err := tensor.QuantizeFP8(ti.Name, rows, cols, vals, br, bc)
		if err != nil {
			t.Fatal(err)
		}
		sc := &tensor.Tensor{Name: strings.TrimSuffix(ti.Name, ".weight") + s.suffix, DType: tensor.F32, Shape: s.scaleShape(rows, cols), Data: make([]byte, 4*len(q.Scales.Values))}
		for i, v := range q.Scales.Values {
			binary.LittleEndian.PutUint32(sc.Data[4*i:], math.Float32bits(v))
		}
		if corrupt != nil && strings.HasPrefix(ti.Name, "model.layers.1.mlp.up_proj") {
			corrupt(sc)
		}
		quant = append(quant, q, sc)
		deq := &tensor.Tensor{Name: ti.Name, DType: tensor.F32, Shape: []int{rows, cols}, Data: make([]byte, 4*rows*cols)}
		gc := (cols + bc - 1) / bc // the twin's values by the scheme's definition, not by the code under test
		tensor.FillRows(deq, func(r int, row []float32) {
			for c := range row {
				row[c] = tensor.E4M3ToF32(q.Data[r*cols+c]) * q.Scales.Values[(r/br)*gc+c/bc]
			}
		})
		twin = append(twin, deq)
	}
	cfgRaw, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(tensors []*tensor.Tensor, quantCfg map[string]any) string {
		dir := t.TempDir()
		var cfg map[string]any
		if err := json.Unmarshal(cfgRaw, &cfg); err != nil {
			t.Fatal(err)
		}
		if quantCfg != nil {
			cfg["quantization_config"] = quantCfg
		}
		b, _ := json.Marshal(cfg)
		if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		if err := safetensors.Write(out, tensors, nil); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"tokenizer.json", "tokenizer.model", "tokenizer_config.json", "generation_config.json"} {
			if err := os.Symlink(filepath.Join(src, name), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	return write(quant, s.quant), write(twin, nil)
}

// TestGoldenFP8 quantizes gocoder-14m's projections to e4m3 in each scale
// scheme and checks that the CPU runs the FP8 file exactly: greedy tokens
// equal, and first-step logits within 1e-4 relative, to a float32 file
// holding the dequantized values. Against PyTorch's float32 reference of
// the bf16 model it reports the matching greedy prefix (the quantization's
// own error: on a 14M model, e4m3's 3-bit mantissa moves greedy paths)
// and asks at least half the greedy tokens before the first difference and
// first-step logits within 1.0, as for Q8_0.
func TestGoldenFP8(t *testing.T) {
	skipUnderRace(t)
	ref := loadReference(t)
	src := fixtures.Path(t, "gocoder-14m-hf")
	var table strings.Builder
	for _, s := range fp8Schemes {
		t.Run(s.name, func(t *testing.T) {
			fp8Dir, twinDir := writeFP8Checkpoint(t, src, s, nil)
			eng, err := Open(context.Background(), fp8Dir, Options{CtxLen: 1024})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			if d := eng.src.Meta()["dtype"]; d != "F8_E4M3" {
				t.Errorf("dtype %q, want F8_E4M3", d)
			}
			twin, err := Open(context.Background(), twinDir, Options{CtxLen: 1024})
			if err != nil {
				t.Fatal(err)
			}
			defer twin.Close()
			full, sumPrefix, sumLen := 0, 0, 0
			var maxRefDiff float64
			prompts := ref.Prompts[:6] // of 12: the run stays under a minute on two cores
			for i, p := range prompts {
				got, d, err := greedyWithFirstLogits(eng, p.PromptIDs, len(p.Target), p.TargetFirst)
				if err != nil {
					t.Fatalf("prompt %d: %v", i, err)
				}
				want, _, err := greedyWithFirstLogits(twin, p.PromptIDs, len(p.Target), nil)
				if err != nil {
					t.Fatalf("prompt %d twin: %v", i, err)
				}
				if n := matchPrefix(got, want); n != len(want) || len(got) != len(want) {
					t.Errorf("prompt %d: FP8 greedy departs from its float32 twin at token %d of %d", i, n, len(want))
				}
				lf, err := lastLogits(eng, p.PromptIDs)
				if err != nil {
					t.Fatal(err)
				}
				lt, err := lastLogits(twin, p.PromptIDs)
				if err != nil {
					t.Fatal(err)
				}
				for j := range lt {
					if diff := math.Abs(float64(lf[j] - lt[j])); diff > 1e-4*math.Max(math.Abs(float64(lt[j])), 1) {
						t.Fatalf("prompt %d: logit %d is %g, float32 twin's %g", i, j, lf[j], lt[j])
					}
				}
				maxRefDiff = math.Max(maxRefDiff, d)
				n := matchPrefix(got, p.Target)
				sumPrefix, sumLen = sumPrefix+n, sumLen+len(p.Target)
				if n == len(p.Target) {
					full++
				}
			}
			fmt.Fprintf(&table, "%-12s vs bf16 reference: %2d of %d prompts in full, %d of %d greedy tokens before the first difference, max first-step logit diff %.3g\n",
				s.name, full, len(prompts), sumPrefix, sumLen, maxRefDiff)
			if 2*sumPrefix < sumLen {
				t.Errorf("%d of %d greedy tokens before the first difference from the bf16 reference, want at least half", sumPrefix, sumLen)
			}
			if maxRefDiff > 1.0 {
				t.Errorf("first-step logits differ from the bf16 reference by up to %g", maxRefDiff)
			}
		})
	}
	t.Log("\n" + table.String())
}

// lastLogits prefills prompt from position 0 and returns the last logits.
func lastLogits(e *Engine, prompt []int32) ([]float32, error) {
	tg, err := e.target(context.Background(), 1)
	if err != nil {
		return nil, err
	}
	tg.attach(nil)
	if err := tg.Rewind(0); err != nil {
		return nil, err
	}
	l, err := tg.Forward(context.Background(), model.Batch{Tokens: prompt, Logits: model.LogitsLast})
	return append([]float32(nil), l...), err
}

// TestFP8Refusals: a corrupt or unimplemented scale is refused naming the
// tensor.
func TestFP8Refusals(t *testing.T) {
	src := fixtures.Path(t, "gocoder-14m-hf")
	setF32 := func(v float32) func(*tensor.Tensor) {
		return func(sc *tensor.Tensor) { binary.LittleEndian.PutUint32(sc.Data, math.Float32bits(v)) }
	}
	block := fp8Schemes[2]
	for _, c := range []struct {
		name    string
		scheme  fp8Scheme
		corrupt func(*tensor.Tensor)
		want    string
	}{
		{"nan", block, setF32(float32(math.NaN())), `scale tensor "model.layers.1.mlp.up_proj.weight_scale_inv": scales: scale 0 (block row 0, block column 0) is NaN`},
		{"inf", fp8Schemes[1], setF32(float32(math.Inf(1))), `"model.layers.1.mlp.up_proj.weight_scale": scales: scale 0 (block row 0, block column 0) is +Inf`},
		{"zero", fp8Schemes[0], setF32(0), "is 0; a scale must be finite and positive"},
		{"block shape", block, func(sc *tensor.Tensor) { sc.Shape = []int{sc.Shape[1], sc.Shape[0]} }, "has shape [4 8], want [8 4] for 128x128 blocks"},
		{"other layout", fp8Schemes[1], func(sc *tensor.Tensor) { sc.Shape = []int{16, 64} }, "implemented: per-tensor ([] or [1]), per-channel ([1024] or [1024, 1])"},
		{"no quantization_config", fp8Scheme{quant: nil, scaleShape: fp8Schemes[0].scaleShape, suffix: ".weight_scale"}, nil, "quantization: 28 tensors (model.layers.0.mlp.down_proj.weight_scale"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := writeFP8Checkpoint(t, src, c.scheme, c.corrupt)
			e, err := Open(context.Background(), dir, Options{CtxLen: 64})
			if err == nil {
				e.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}
