// Package llamacpp drives the llama.cpp peer that `rigscope bench-cpu`
// measures against: cbench, a thin C++ driver over llama.cpp's prebuilt
// CPU libraries (../shared/peers/llamacpp: cbench.cpp, setup.sh builds it),
// which times decoding and prompt processing of one GGUF file and prints
// the tokens/s of each repetition.
package llamacpp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// Where ../shared/peers/llamacpp/setup.sh puts the driver and the llama.cpp
// libraries it loads.
const (
	DefaultDriver = "/tmp/rigscope-peer/cbench"
	DefaultBins   = "/tmp/rigscope-peer/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
)

// Driver is a built cbench and the directory of llama.cpp CPU backend
// libraries it loads (LLAMA_BINS).
type Driver struct {
	Path string
	Bins string
}

// Command is the process that measures model: threads threads, nGen
// single-token decodes after a short prompt (tg), one nPP-token prompt
// batch (pp), reps timed repetitions of each; with a persistent thread
// pool polling at 50, as llama-bench runs. Its output is read by ParseRuns.
func (d Driver) Command(ctx context.Context, model string, threads, nGen, nPP, reps int) *exec.Cmd {
	cmd := exec.CommandContext(ctx, d.Path, model, strconv.Itoa(threads), strconv.Itoa(nGen), strconv.Itoa(nPP), strconv.Itoa(reps))
	cmd.Env = append(os.Environ(), "LLAMA_BINS="+d.Bins, "POLL=50")
	return cmd
}

var runsLine = regexp.MustCompile(`(?m)^(tg|pp)\d+ tok/s runs:([0-9. ]+?)\s+median`)

// ParseRuns reads cbench's "tg256 tok/s runs: a b c  median m" and
// "pp512 tok/s runs: ..." lines: the tokens/s of every repetition.
func ParseRuns(out []byte) (tg, pp []float64, err error) {
	for _, m := range runsLine.FindAllSubmatch(out, -1) {
		for _, s := range strings.Fields(string(m[2])) {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("peer output %q: %w", m[0], err)
			}
			if string(m[1]) == "tg" {
				tg = append(tg, v)
			} else {
				pp = append(pp, v)
			}
		}
	}
	if len(tg) == 0 || len(pp) == 0 {
		return nil, nil, fmt.Errorf("no tg/pp lines in its output:\n%s", out)
	}
	return tg, pp, nil
}
