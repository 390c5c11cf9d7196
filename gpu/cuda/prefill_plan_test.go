package cuda

import "testing"

func TestCBResident(t *testing.T) {
	const G = int64(1) << 30
	for _, c := range []struct {
		name              string
		copy, free, total int64
		want              bool
	}{
		{"llama-8b layers on an H200 with room", 14 * G, 100 * G, 140 * G, true},
		{"exactly the reserve left (a tenth of 140 GiB)", 14 * G, 28 * G, 140 * G, true},
		{"one byte short of the reserve", 14 * G, 28*G - 1, 140 * G, false},
		{"small GPU: the 4 GiB floor", 2 * G, 6 * G, 16 * G, true},
		{"small GPU under the floor", 2 * G, 6*G - 1, 16 * G, false},
		{"nothing to copy (weights already row-major)", 0, 100 * G, 140 * G, false},
		{"free below the reserve", 1, 1 * G, 140 * G, false},
	} {
		if got := cbResident(c.copy, c.free, c.total); got != c.want {
			t.Errorf("%s: cbResident(%d, %d, %d) = %v, want %v", c.name, c.copy, c.free, c.total, got, c.want)
		}
	}
}

// TestUntileIndex checks cb_untile's index formula (kernels/cublas.cu),
// written out here in Go, against tileBF16: thread i's 16-byte chunk, word
// j, goes to row nt*16 + 8(j&1) + g, column kt*16 + 8(j>>1) + 2c.
func TestUntileIndex(t *testing.T) {
	for _, s := range [][2]int{{16, 16}, {48, 80}, {32, 256}} {
		N, K := s[0], s[1]
		src := make([]byte, 2*N*K)
		for i := range N * K {
			src[2*i], src[2*i+1] = byte(i), byte(i>>8)
		}
		tiled := tileBF16(src, N, K)
		got := make([]byte, len(src))
		for i := 0; i < N*K/8; i++ {
			tile, lane := i>>5, i&31
			nt, kt, g, c := tile/(K/16), tile%(K/16), lane>>2, lane&3
			for j := 0; j < 4; j++ {
				row, col := nt*16+8*(j&1)+g, kt*16+8*(j>>1)+2*c
				copy(got[2*(row*K+col):2*(row*K+col)+4], tiled[16*i+4*j:16*i+4*j+4])
			}
		}
		if string(got) != string(src) {
			t.Errorf("%dx%d: untiled matrix differs from the row-major one", N, K)
		}
	}
}
