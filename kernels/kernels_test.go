package kernels

import (
	"strings"
	"testing"
)

// Both embedded PTX modules decompress to PTX for their architecture.
func TestEmbeddedPTX(t *testing.T) {
	for _, tc := range []struct {
		major  int
		name   string
		target string
	}{{8, "sm_80", ".target sm_80"}, {9, "sm_90", ".target sm_90"}} {
		name, ptx, err := For(tc.major, 0)
		if err != nil || name != tc.name || !strings.Contains(ptx, tc.target) || !strings.Contains(ptx, ".entry ars_add") {
			t.Errorf("For(%d, 0) = %s, %d bytes, %v; want %s PTX with the kernels", tc.major, name, len(ptx), err, tc.name)
		}
	}
}
