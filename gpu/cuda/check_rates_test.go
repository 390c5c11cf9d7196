//go:build cuda

package cuda

import (
	"fmt"
	"io"

	"gorgonia.org/cu"
)

// checkRates times the instruction probes of kernels/rate.cu (8 warps a
// block, 8 blocks an SM, 8 independent chains a thread): the rate of each
// instruction per SM and clock (the device's reported clock), and the int8
// or f16 products per SM and clock it delivers. A quantized decode
// product's cost per token is its integer dots (dp4a: 4 products each);
// the ratio to mma.sync's says how much a tensor-core verify can gain.
func checkRates(d *Device, w io.Writer) error {
	s, timed, done, err := d.timedStream()
	if err != nil {
		return err
	}
	defer done()
	khz, err := d.dev.Attribute(cu.ClockRate)
	if err != nil {
		return fmt.Errorf("cuda check: clock rate: %w", err)
	}
	const threads, rounds, chains = 256, 2048, 8
	blocks := 8 * d.SMs
	h := newDevHelper(s)
	defer h.free()
	out := h.alloc(int64(4 * blocks * threads))
	if h.err != nil {
		return h.err
	}
	probes := []struct {
		name string
		warp bool    // one instruction per warp (mma), else per thread
		prod float64 // products per instruction
	}{
		{"rate_ffma", false, 1},
		{"rate_dp4a", false, 4},
		{"rate_cvt8", false, 2},
		{"rate_imma", true, 16 * 8 * 32},
		{"rate_hmma", true, 16 * 8 * 16},
	}
	fmt.Fprintf(w, "\ninstruction rates (%d SMs at %.0f MHz reported; %d blocks of %d threads, %d rounds of %d chains)\n%-10s %9s %14s %16s\n",
		d.SMs, float64(khz)/1e3, blocks, threads, rounds, chains, "probe", "us", "instr/clk/SM", "products/clk/SM")
	for _, p := range probes {
		fn, err := d.fn(p.name)
		if err != nil {
			return err
		}
		us, err := timed(5, func(int) error {
			return launch(fn, [3]int{blocks, 1, 1}, [3]int{threads, 1, 1}, 0, s, ptr(out), i32(rounds))
		})
		if err != nil {
			return fmt.Errorf("cuda check: %s: %w", p.name, err)
		}
		instr := float64(blocks*threads) * rounds * chains
		if p.warp {
			instr /= 32
		}
		perClk := instr / (us * 1e-6 * float64(khz) * 1e3 * float64(d.SMs))
		fmt.Fprintf(w, "%-10s %9.1f %14.2f %16.1f\n", p.name, us, perClk, perClk*p.prod)
	}
	return nil
}
