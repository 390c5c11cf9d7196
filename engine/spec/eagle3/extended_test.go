package eagle3

import (
	"slices"
	"testing"
)

// ExtendedOnDevice trusts the device's rows only where they continue the
// rows the drafter tracks on the device, with observed features: any
// other report forgets every row (the next chain extends from row 0).
func TestExtendedOnDevice(t *testing.T) {
	for _, c := range []struct {
		name                  string
		rowsOnDev             bool
		rows, featLen, pos, n int
		wantRows              int
	}{
		{"continues the rows", true, 10, 14, 10, 4, 14},
		{"redoes the last rows", true, 10, 14, 8, 3, 11},
		{"past the tracked rows", true, 10, 20, 11, 2, 0},
		{"past the features", true, 10, 12, 10, 4, 0},
		{"past the cache", true, 10, 40, 30, 4, 0},
		{"rows on the CPU", false, 10, 14, 10, 4, 0},
	} {
		d := &Drafter{slots: 32, rowTok: make([]int32, 32), rows: c.rows, featLen: c.featLen, rowsOnDev: c.rowsOnDev}
		toks := make([]int32, c.n)
		for i := range toks {
			toks[i] = int32(100 + i)
		}
		d.ExtendedOnDevice(c.pos, toks)
		switch {
		case d.rows != c.wantRows:
			t.Errorf("%s: rows %d, want %d", c.name, d.rows, c.wantRows)
		case c.wantRows > 0 && !slices.Equal(d.rowTok[c.pos:c.pos+c.n], toks):
			t.Errorf("%s: row tokens %v, want %v", c.name, d.rowTok[c.pos:c.pos+c.n], toks)
		}
	}
}
