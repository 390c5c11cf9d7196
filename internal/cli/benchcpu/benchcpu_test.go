package benchcpu

import "testing"

func TestRSSCells(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		ours, peer, base, file int64
		kvMB                   float64
		want                   string
	}{
		{"measured", 34 << 10, 38 << 10, 9 << 10, 14586208, 8, "34 MiB | 38 MiB | 26 MiB | 9 MiB"},
		{"no baseline", 15 << 10, 16 << 10, 0, 1920768, 1, "15 MiB | 16 MiB | 3 MiB | "},
		{"pp row", 0, 0, 0, 1920768, 1, " | | | "},
	} {
		if got := rssCells(tc.ours, tc.peer, tc.base, tc.file, tc.kvMB); got != tc.want {
			t.Errorf("%s: rssCells = %q, want %q", tc.name, got, tc.want)
		}
	}
}
