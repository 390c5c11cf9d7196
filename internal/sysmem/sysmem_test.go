package sysmem

import (
	"bufio"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"MemTotal:       24000000 kB\nMemAvailable:   2048 kB\n", 2048 << 10, true},
		{"MemTotal:       24000000 kB\n", 0, false},
		{"MemAvailable:   -5 kB\n", 0, false},
		{"MemAvailable:   5 MB\n", 0, false},
		{"MemAvailable:   99999999999999999999 kB\n", 0, false},
	} {
		got, err := parse(bufio.NewScanner(strings.NewReader(tc.in)))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parse(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	if n, err := Available(); err == nil && n <= 0 {
		t.Errorf("Available() = %d on this machine", n)
	}
}
