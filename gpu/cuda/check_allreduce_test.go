//go:build cuda

package cuda

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// checkAllReduce runs every GPU allreduce backend of cuda.Group (the step's
// own kernels, arKernel) against a float64 sum: 2, 4 and 8 ranks sharing
// d, one context (shared) and every rank opening d as its own device
// (each: the path of one rank per GPU, peer pointers aside; up to 1M),
// 1 element to 64M, outputs poisoned with NaN before each call. A float32 sum in rank
// order differs from the float64 one by rounding only: the bound is
// 1e-5 (a relative error of R ulps at most, well under it); NaN (an
// output no kernel wrote) or more fails.
func checkAllReduce(d *Device, stdout io.Writer) error {
	sizes := []int{1, 7, 1000, 65536, 1 << 20, 64 << 20}
	fmt.Fprintf(stdout, "\nGPU allreduce backends (the step's kernels through cuda.Group) vs a float64 sum on %s: max rel error, outputs poisoned\n%-6s %-5s %-8s", d.Name, "path", "ranks", "backend")
	for _, n := range sizes {
		fmt.Fprintf(stdout, " %10d", n)
	}
	fmt.Fprintln(stdout)
	var failed []string
	var own []*Device
	for _, path := range []string{"shared", "each"} {
		for _, R := range []int{2, 4, 8} {
			devs := make([]*Device, R)
			for r := range devs {
				devs[r] = d
				if path == "each" && r > 0 {
					for len(own) < r {
						o, err := Open(d.Ordinal)
						if err != nil {
							return err
						}
						own = append(own, o)
					}
					devs[r] = own[r-1]
				}
			}
			for _, b := range []string{"oneshot", "twoshot", "host"} {
				g, err := NewGroupOn(devs, b, sizes[len(sizes)-1])
				if err != nil {
					return fmt.Errorf("%s %d ranks %s: %w", path, R, b, err)
				}
				fmt.Fprintf(stdout, "%-6s %-5d %-8s", path, R, b)
				for i, n := range sizes {
					if path == "each" && n > 1<<20 {
						fmt.Fprintf(stdout, " %10s", "-") // the size is the shared path's concern; each checks the per-device kernels and tables
						continue
					}
					rel, err := g.Check(n, uint32(1000*R+i))
					if err != nil {
						g.Close()
						return fmt.Errorf("%s %d ranks %s, %d floats: %w", path, R, b, n, err)
					}
					fmt.Fprintf(stdout, " %10.2e", rel)
					if math.IsNaN(rel) || rel > 1e-5 {
						failed = append(failed, fmt.Sprintf("%s %d ranks %s %d floats: %.2e", path, R, b, n, rel))
					}
				}
				fmt.Fprintln(stdout)
				g.Close()
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	return nil
}
