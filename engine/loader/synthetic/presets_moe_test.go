package synthetic

import (
	"io"
	"strings"
	"testing"
)

// The MoE presets have valid configs of their real models' sizes; none
// is exported as a plain Llama GGUF.
func TestMoEPresets(t *testing.T) {
	for name, want := range map[string]struct{ total, active float64 }{ // billions of parameters
		"mixtral-8x7b":  {46.7, 12.9},
		"qwen3-30b-a3b": {30.5, 3.3},
		"deepseek-v3":   {0, 0}, // 4 of 61 layers: no published size
		"tiny-moe":      {0, 0},
		"tiny-mla":      {0, 0},
	} {
		src, err := Open(name)
		if err != nil {
			t.Fatal(err)
		}
		c := src.Config()
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if len(c.Extensions()) == 0 {
			t.Errorf("%s: no extensions named; the GPU would not refuse it", name)
		}
		if want.total > 0 {
			p, a := float64(c.Params())/1e9, float64(c.ActiveParams())/1e9
			if p < want.total-0.2 || p > want.total+0.2 || a < want.active-0.2 || a > want.active+0.2 {
				t.Errorf("%s: %.2fB parameters, %.2fB active; want %.1fB, %.1fB", name, p, a, want.total, want.active)
			}
		}
		if err := src.WriteGGUF(io.Discard); err == nil || !strings.Contains(err.Error(), "mixture of experts") {
			t.Errorf("%s: WriteGGUF error %v, want a refusal naming the mixture of experts", name, err)
		}
		if src.Meta()["architecture"] != c.Arch {
			t.Errorf("%s: meta architecture %q, want %q", name, src.Meta()["architecture"], c.Arch)
		}
	}
}
