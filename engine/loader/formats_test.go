package loader

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"rigscope/engine/loader/llama2c"
	"rigscope/engine/loader/safetensors"
	"rigscope/engine/model"
	"rigscope/engine/tensor"
)

// writeHFDir writes a tiny Hugging Face model directory for cfg; edit
// adjusts the HF-named tensors before writing.
func writeHFDir(t *testing.T, cfg model.Config, configJSON string, edit func(map[string]*tensor.Tensor)) string {
	t.Helper()
	dir := t.TempDir()
	byHF := map[string]*tensor.Tensor{}
	var order []string
	for _, w := range tinyTensors(cfg) {
		hf, ok := hfTensorName(w.Name)
		if !ok {
			t.Fatalf("hfTensorName(%q) failed", w.Name)
		}
		c := *w
		c.Name = hf
		byHF[hf] = &c
		order = append(order, hf)
	}
	if edit != nil {
		edit(byHF)
	}
	var ts []*tensor.Tensor
	for _, n := range order {
		if w, ok := byHF[n]; ok {
			ts = append(ts, w)
			delete(byHF, n)
		}
	}
	added := slices.Sorted(maps.Keys(byHF)) // tensors edit added
	for _, n := range added {
		ts = append(ts, byHF[n])
	}
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, ts, nil); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "model.safetensors", buf.Bytes())
	writeFile(t, dir, "config.json", []byte(configJSON))
	writeFile(t, dir, "tokenizer_config.json", []byte(`{"chat_template":"{% for m in messages %}{{m}}{% endfor %}"}`))
	return dir
}

const tinyHFConfig = `{"architectures":["LlamaForCausalLM"],"hidden_size":8,"num_hidden_layers":2,"num_attention_heads":2,
"num_key_value_heads":1,"intermediate_size":12,"vocab_size":6,"max_position_embeddings":16,"rms_norm_eps":1e-5,
"rope_theta":10000.0,"tie_word_embeddings":false,"hidden_act":"silu"}`

func TestOpenTinyHF(t *testing.T) {
	want := tinyCfg
	want.RopeLayout = model.RopeHalf
	dir := writeHFDir(t, want, tinyHFConfig, nil)
	src, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open(%q): %v", dir, err)
	}
	defer src.Close()
	if got := src.Config(); got != want {
		t.Errorf("Open(%q).Config() = %+v, want %+v", dir, got, want)
	}
	if m := src.Meta(); m["format"] != "hf-safetensors" || m["dtype"] != "F32" || !strings.Contains(m["chat_template"], "messages") {
		t.Errorf("Open(%q).Meta() = %v", dir, m)
	}
	w, err := src.Tensor(model.LayerName(1, "ffn_down"))
	if err != nil || w.Name != "blk.1.ffn_down.weight" || w.ExpectShape(8, 12) != nil {
		t.Errorf("Tensor(blk.1.ffn_down.weight) = %+v, %v", w, err)
	}

	// Tied: lm_head absent and config says so.
	tied := tinyCfg
	tied.RopeLayout, tied.TiedEmbed = model.RopeHalf, true
	tiedJSON := strings.Replace(tinyHFConfig, `"tie_word_embeddings":false`, `"tie_word_embeddings":true`, 1)
	tiedJSON = strings.Replace(tiedJSON, `"rope_theta":10000.0`, `"rope_parameters":{"rope_theta":10000.0}`, 1)
	dir = writeHFDir(t, tied, tiedJSON, nil)
	src2, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open(%q) tied: %v", dir, err)
	}
	defer src2.Close()
	if got := src2.Config(); got != tied {
		t.Errorf("Open(%q).Config() = %+v, want %+v", dir, got, tied)
	}
}

func TestOpenHFErrors(t *testing.T) {
	hfCfg := tinyCfg
	hfCfg.RopeLayout = model.RopeHalf
	tests := []struct {
		name   string
		config string
		edit   func(map[string]*tensor.Tensor)
		want   []string
	}{
		{"missing lm_head", tinyHFConfig, func(m map[string]*tensor.Tensor) { delete(m, "lm_head.weight") }, []string{`"output.weight"`, `"lm_head.weight"`}},
		{"wrong shape", tinyHFConfig, func(m map[string]*tensor.Tensor) {
			m["model.layers.0.mlp.up_proj.weight"] = &tensor.Tensor{Name: "model.layers.0.mlp.up_proj.weight", DType: tensor.F32, Shape: []int{12, 4}, Data: make([]byte, 192)}
		}, []string{`"blk.0.ffn_up.weight"`, "[12 4]", "want [12 8]"}},
		{"bias", strings.Replace(tinyHFConfig, `"hidden_act"`, `"attention_bias":true,"hidden_act"`, 1), nil, []string{"attention_bias"}},
		{"bad heads", strings.Replace(tinyHFConfig, `"num_key_value_heads":1`, `"num_key_value_heads":3`, 1), nil, []string{"not divisible"}},
		{"bad json", `{"architectures":`, nil, []string{"config.json"}},
	}
	for _, tt := range tests {
		dir := writeHFDir(t, hfCfg, tt.config, tt.edit)
		src, err := Open(dir, Options{})
		if err == nil {
			src.Close()
			t.Errorf("%s: Open(%q) succeeded", tt.name, dir)
			continue
		}
		for _, w := range append(tt.want, dir) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Open(%q) error = %q, want it to contain %q", tt.name, dir, err, w)
			}
		}
	}
}

func TestOpenTinyLlama2C(t *testing.T) {
	h := llama2c.Header{Dim: 8, HiddenDim: 12, Layers: 2, Heads: 2, KVHeads: 1, VocabSize: -6, SeqLen: 16}
	byName := map[string]*tensor.Tensor{}
	for _, w := range tinyTensors(tinyCfg) {
		byName[w.Name] = w
	}
	var buf bytes.Buffer
	err := llama2c.Write(&buf, h, func(name string) (*tensor.Tensor, error) {
		if w, ok := byName[name]; ok {
			return w, nil
		}
		return nil, fmt.Errorf("no %q", name)
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := writeFile(t, dir, "tiny.llama2c.bin", buf.Bytes())
	src, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	defer src.Close()
	if got := src.Config(); got != tinyCfg {
		t.Errorf("Open(%q).Config() = %+v, want %+v", path, got, tinyCfg)
	}
	for name, want := range byName {
		got, err := src.Tensor(name)
		if err != nil || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("Open(%q).Tensor(%q) differs from what was written (err %v)", path, name, err)
		}
	}
	_, err = src.Tokenizer()
	if err == nil || !strings.Contains(err.Error(), "--tokenizer") || !strings.Contains(err.Error(), "--prompt-ids") || !strings.Contains(err.Error(), "tiny.tokenizer.bin") {
		t.Errorf("Open(%q).Tokenizer() error = %v, want advice naming --tokenizer, --prompt-ids and tiny.tokenizer.bin", path, err)
	}
	missing := filepath.Join(dir, "nope.bin")
	if _, err := Open(path, Options{TokenizerPath: missing}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Open(%q, TokenizerPath: %q) error = %v, want one naming the tokenizer", path, missing, err)
	}
	// RoPE tables of another base (500000) than the engine's (10000).
	var other bytes.Buffer
	h500k := func(name string) (*tensor.Tensor, error) {
		if w, ok := byName[name]; ok {
			return w, nil
		}
		if !strings.HasPrefix(name, "freq_cis_") {
			return nil, fmt.Errorf("no %q", name)
		}
		w := &tensor.Tensor{Name: name, DType: tensor.F32, Shape: []int{16, 2}, Data: make([]byte, 4*32)}
		f := make([]float32, 32)
		for p := range 16 {
			for i := range 2 {
				a := float64(p) * math.Pow(500000, -float64(2*i)/4)
				f[2*p+i] = float32(math.Sin(a))
				if name == "freq_cis_real" {
					f[2*p+i] = float32(math.Cos(a))
				}
			}
		}
		tensor.Encode(w.Data, tensor.F32, f)
		return w, nil
	}
	if err := llama2c.Write(&other, h, h500k); err != nil {
		t.Fatal(err)
	}
	otherPath := writeFile(t, dir, "theta500k.llama2c.bin", other.Bytes())
	if _, err := Open(otherPath, Options{}); err == nil || !strings.Contains(err.Error(), "RoPE scaling: freq_cis_real[15][1] = 0.999775, where RoPE of base 10000 gives 0.988771") {
		t.Errorf("Open(%q) error = %v, want a refusal naming freq_cis_real[15][1]", otherPath, err)
	}
	// Truncated: no longer consistent with its header, so not recognised.
	trunc := writeFile(t, dir, "trunc.bin", buf.Bytes()[:buf.Len()-4])
	if _, err := Open(trunc, Options{}); err == nil || !strings.Contains(err.Error(), "unknown model format") {
		t.Errorf("Open(%q) error = %v, want unknown model format", trunc, err)
	}
}
