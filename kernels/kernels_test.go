package kernels

import (
	"strings"
	"testing"
)

// The embedded images decompress to what their names say, in the order
// a device of each compute capability tries them: the sm_90 cubin (an ELF
// file) first on 9.0, the PTX of the architecture elsewhere and after it.
func TestEmbeddedImages(t *testing.T) {
	for _, tc := range []struct {
		major, minor int
		names        []string
	}{{8, 0, []string{"sm_80"}}, {8, 9, []string{"sm_80"}}, {9, 0, []string{"sm_90 cubin", "sm_90"}}, {10, 0, []string{"sm_90"}}, {12, 0, []string{"sm_90"}}} {
		var names []string
		for _, im := range For(tc.major, tc.minor) {
			names = append(names, im.Name)
			b, err := im.Load()
			cubin := strings.HasSuffix(im.Name, "cubin")
			switch {
			case err != nil && !cubin && len(ptx90) == 0 && strings.Contains(err.Error(), "cubinonly"):
				// -tags cubinonly: only the sm_90 cubin is embedded, and the PTX says so.
			case err != nil:
				t.Errorf("%d.%d: %s: %v", tc.major, tc.minor, im.Name, err)
			case cubin && !strings.HasPrefix(b, "\x7fELF"):
				t.Errorf("%d.%d: %s is not an ELF file (%q...)", tc.major, tc.minor, im.Name, b[:min(8, len(b))])
			case !cubin && (!strings.Contains(b, ".target "+im.Name) || !strings.Contains(b, ".entry ars_add")):
				t.Errorf("%d.%d: %s: %d bytes, not PTX for %s with the kernels", tc.major, tc.minor, im.Name, len(b), im.Name)
			}
		}
		if strings.Join(names, ",") != strings.Join(tc.names, ",") {
			t.Errorf("For(%d, %d) = %v, want %v", tc.major, tc.minor, names, tc.names)
		}
	}
}
