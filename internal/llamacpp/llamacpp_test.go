package llamacpp

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestParseRuns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		out    string
		tg, pp []float64
		err    string
	}{
		{name: "cbench", out: "model loaded\ntg256 tok/s runs: 101.5 99.0 100.2  median 100.2\npp512 tok/s runs: 900.0 950.5  median 925.2\n",
			tg: []float64{101.5, 99, 100.2}, pp: []float64{900, 950.5}},
		{name: "pp only", out: "pp512 tok/s runs: 900.0  median 900.0\n", err: "no tg/pp lines"},
		{name: "nothing", out: "error: failed to load model\n", err: "failed to load model"},
		{name: "a number that does not parse", out: "tg8 tok/s runs: 1.2.3  median 1\npp8 tok/s runs: 2  median 2\n", err: `peer output "tg8 tok/s runs: 1.2.3`},
	} {
		tg, pp, err := ParseRuns([]byte(tc.out))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(tg, tc.tg) || !slices.Equal(pp, tc.pp) {
			t.Errorf("%s: ParseRuns = %v, %v, %v; want %v, %v", tc.name, tg, pp, err, tc.tg, tc.pp)
		}
	}
}

func TestCommand(t *testing.T) {
	cmd := Driver{Path: "/x/cbench", Bins: "/x/bins"}.Command(context.Background(), "m.gguf", 2, 256, 512, 3)
	if want := []string{"/x/cbench", "m.gguf", "2", "256", "512", "3"}; !slices.Equal(cmd.Args, want) {
		t.Errorf("args %q, want %q", cmd.Args, want)
	}
	if env := cmd.Env[len(cmd.Env)-2:]; !slices.Equal(env, []string{"LLAMA_BINS=/x/bins", "POLL=50"}) {
		t.Errorf("env ends %q", env)
	}
}

// FuzzParseRuns: any output parses or is refused, never a panic, and a
// parse has figures for both workloads.
func FuzzParseRuns(f *testing.F) {
	f.Add("tg256 tok/s runs: 101.5 99.0  median 100.2\npp512 tok/s runs: 900.0  median 900.0\n")
	f.Add("tg1 tok/s runs: 1e999  median 1\npp1 tok/s runs: NaN  median 1\n")
	f.Fuzz(func(t *testing.T, out string) {
		tg, pp, err := ParseRuns([]byte(out))
		if err == nil && (len(tg) == 0 || len(pp) == 0) {
			t.Errorf("ParseRuns(%q) = %v, %v with no error", out, tg, pp)
		}
	})
}
