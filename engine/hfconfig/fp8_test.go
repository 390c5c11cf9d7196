package hfconfig

import (
	"strings"
	"testing"
)

func TestReadFP8(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       *FP8
		err        string
	}{
		{"none", `{}`, nil, ""},
		{"deepseek blocks", `{"quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}}`, &FP8{BlockRows: 128, BlockCols: 128}, ""},
		{"per tensor static", `{"quantization_config": {"quant_method": "fp8", "activation_scheme": "static", "ignored_layers": ["lm_head"]}}`, &FP8{StaticActivations: true}, ""},
		{"awq", `{"quantization_config": {"quant_method": "awq", "bits": 4}}`, nil, "quantization_config = awq"},
		{"e5m2", `{"quantization_config": {"quant_method": "fp8", "fmt": "e5m2"}}`, nil, `quantization_config.fmt = "e5m2"`},
		{"64 blocks", `{"quantization_config": {"quant_method": "fp8", "weight_block_size": [64, 64]}}`, nil, "quantization_config.weight_block_size = [64,64]"},
		{"block not a pair", `{"quantization_config": {"quant_method": "fp8", "weight_block_size": [128]}}`, nil, "weight_block_size = [128]"},
		{"kv cache", `{"quantization_config": {"quant_method": "fp8", "kv_cache_scheme": {"type": "float"}}}`, nil, "quantization_config.kv_cache_scheme"},
		{"activations", `{"quantization_config": {"quant_method": "fp8", "activation_scheme": "mx"}}`, nil, `activation_scheme = "mx"`},
		{"not an object", `{"quantization_config": 3}`, nil, "is not an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadFP8([]byte(tc.json))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			items, err := CheckFor([]byte(tc.json), Implemented{FP8: true})
			if err != nil || len(items) != 0 {
				t.Fatalf("CheckFor with FP8: %v %v", items, err)
			}
		})
	}
	// A reader without FP8 refuses every quantization_config.
	items, err := Check([]byte(`{"quantization_config": {"quant_method": "fp8"}}`))
	if err != nil || len(items) != 1 {
		t.Fatalf("Check without FP8: %v %v", items, err)
	}
}
