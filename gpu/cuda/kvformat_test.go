package cuda

import (
	"fmt"
	"strings"
	"testing"

	"rigscope/kernels"
)

// kvFormats are the cache formats the tests and checks compare, float32
// (the oracle) first.
var kvFormats = []kvFormat{kvF32, kvBF16}

// Every cache-reading kernel the Go side can name (kvFormat.kernel of the
// names attnLaunch, attnKernel, attnPlan.kernel and the prefill path build) is in both
// embedded PTX modules, in each format.
func TestKVKernelsEmbedded(t *testing.T) {
	var names []string
	for _, hd := range []int{16, 32, 64, 128, 256} {
		for _, rpw := range []int{1, 2} {
			names = append(names, fmt.Sprintf("attn_%d_%d", hd, rpw), fmt.Sprintf("attnx_%d_%d", hd, rpw))
		}
	}
	for _, hd := range []int{32, 64, 128, 256} {
		names = append(names, fmt.Sprintf("pf_attn_%d", hd))
	}
	names = append(names, "pf_fa_64", "pf_fa_128", "pf_kv")
	for _, major := range []int{8, 10} { // the sm_80 PTX, and the sm_90 PTX (a device newer than 9.0 loads it)
		im := kernels.For(major, 0)[0]
		arch := im.Name
		ptx, err := im.Load()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range kvFormats {
			for _, n := range names {
				k := f.kernel(n)
				if strings.HasPrefix(n, "attn") { // attnPlan.kernel's twins: one-token steps, the split by length
					for _, suf := range []string{"", "_t1", "_len"} {
						if !strings.Contains(ptx, ".entry "+k+suf+"(") {
							t.Errorf("%s PTX lacks %s (%s cache)", arch, k+suf, f)
						}
					}
				} else if !strings.Contains(ptx, ".entry "+k+"(") {
					t.Errorf("%s PTX lacks %s (%s cache)", arch, k, f)
				}
			}
		}
	}
}
