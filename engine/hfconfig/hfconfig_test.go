package hfconfig

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFields(t *testing.T) {
	for _, tc := range []struct {
		name            string
		json            string
		kv, hd          int
		eps, theta      float32
		scaling, errSub string
	}{
		{"defaults", `{"hidden_size": 64, "num_attention_heads": 4}`, 4, 16, 1e-5, 10000, "", ""},
		{"explicit", `{"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "rms_norm_eps": 1e-6, "rope_theta": 500000}`, 2, 32, 1e-6, 500000, "", ""},
		{"no heads", `{"hidden_size": 64}`, 0, 0, 1e-5, 10000, "", ""},
		{"rope_parameters", `{"rope_parameters": {"rope_theta": 1e6, "rope_type": "default"}}`, 0, 0, 1e-5, 1e6, "default", ""},
		{"top level wins", `{"rope_theta": 1000, "rope_parameters": {"rope_theta": 1e6}}`, 0, 0, 1e-5, 1000, "", ""},
		{"null", `{"rope_parameters": null, "rope_scaling": null}`, 0, 0, 1e-5, 10000, "", ""},
		{"rope_scaling rope_type", `{"rope_scaling": {"rope_type": "llama3", "factor": 8}}`, 0, 0, 1e-5, 10000, "llama3", ""},
		{"rope_scaling type", `{"rope_scaling": {"type": "linear", "factor": 2}}`, 0, 0, 1e-5, 10000, "linear", ""},
		{"scaling over parameters", `{"rope_parameters": {"rope_type": "default"}, "rope_scaling": {"rope_type": "yarn"}}`, 0, 0, 1e-5, 10000, "yarn", ""},
		{"bad rope_parameters", `{"rope_parameters": [1]}`, 0, 0, 1e-5, 0, "", "rope_parameters"},
		{"bad rope_scaling", `{"rope_scaling": "x"}`, 0, 0, 1e-5, 0, "", "rope_scaling"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f Fields
			if err := json.Unmarshal([]byte(tc.json), &f); err != nil {
				t.Fatal(err)
			}
			if kv, hd := f.Shape(); kv != tc.kv || hd != tc.hd {
				t.Errorf("Shape = %d, %d; want %d, %d", kv, hd, tc.kv, tc.hd)
			}
			if eps := f.NormEps(1e-5); eps != tc.eps {
				t.Errorf("NormEps = %g; want %g", eps, tc.eps)
			}
			theta, scaling, err := f.Rope(10000)
			if tc.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("Rope error %v; want one mentioning %q", err, tc.errSub)
				}
				return
			}
			if err != nil || theta != tc.theta || scaling != tc.scaling {
				t.Errorf("Rope = %g, %q, %v; want %g, %q", theta, scaling, err, tc.theta, tc.scaling)
			}
		})
	}
}

func TestUnscaled(t *testing.T) {
	for s, want := range map[string]bool{"": true, "default": true, "llama3": false, "linear": false} {
		if Unscaled(s) != want {
			t.Errorf("Unscaled(%q) = %v", s, !want)
		}
	}
}

// FuzzFields: any config.json parses into Fields and resolves without a panic.
func FuzzFields(f *testing.F) {
	f.Add([]byte(`{"hidden_size": 64, "num_attention_heads": 4, "rope_parameters": {"rope_theta": 1e6}}`))
	f.Add([]byte(`{"rope_scaling": {"type": "linear"}, "num_attention_heads": 0}`))
	f.Add([]byte(`{"num_attention_heads": -3, "hidden_size": 7, "head_dim": null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var fl Fields
		if json.Unmarshal(b, &fl) != nil {
			return
		}
		fl.Shape()
		fl.NormEps(1e-5)
		fl.Rope(10000)
	})
}
