// Package allreduce is `rigscope allreduce-bench`: every allreduce
// backend timed and checked against a float64 sum over message sizes, in
// the style of nccl-tests: CPU ranks (engine/tp) here, GPU ranks
// (gpu/cuda, -tags cuda builds) in gpu_cuda.go, with the auto backend's
// table calibrated in the run (engine/tp's BuildAutoTable); and
// `rigscope cuda-allreduce` (cuda builds), its GPU check at the sizes that
// exercise the kernels' tails.
package allreduce

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"rigscope/engine/tp"
	"rigscope/gpu/cuda"
	"rigscope/internal/cli"
	"rigscope/internal/sysmem"
)

// Command is `rigscope allreduce-bench`.
var Command = cli.Command{
	Name:    "allreduce-bench",
	Summary: "time every allreduce backend over message sizes (nccl-tests style); --device cuda for GPU ranks",
	Run:     runAllReduceBench,
}

// benchRow is one line of the table (and of --json).
type benchRow struct {
	Backend   string  `json:"backend"`
	Ranks     int     `json:"ranks"`
	Bytes     int64   `json:"bytes"`
	Count     int64   `json:"count"`
	Type      string  `json:"type"`
	TimeUs    float64 `json:"time_us"`
	AlgBW     float64 `json:"algbw_GBps"`
	BusBW     float64 `json:"busbw_GBps"`
	MaxRelErr float64 `json:"max_rel_err"` // max|got-ref| / max|ref|, ref = float64 sum
	Picked    string  `json:"picked,omitempty"`
}

func runAllReduceBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("allreduce-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	device := fs.String("device", "cpu", "cpu (ranks are goroutines) or cuda (GPU ranks: one per GPU when there are enough, else all on GPU 0; needs a -tags cuda build)")
	backendFlag := fs.String("backend", "all", "all, or a comma-separated list of: "+strings.Join(tp.Names(), ", ")+" (cpu); "+strings.Join(gpuBackendNames, ", ")+" (cuda)")
	ranksFlag := fs.String("ranks", "2,4,8", "comma-separated group sizes")
	shareGPU := fs.Bool("share-gpu", false, "cuda: put every rank on GPU 0 even when the machine has a GPU per rank")
	latency := fs.Bool("latency", false, "cuda: also print the latency histogram summaries (p50/p99/mean per backend and size)")
	sizesFlag := fs.String("sizes", "1K:16M", "bytes per rank: FIRST:LAST doubles, A,B,C is taken as is (K, M, G = 1024^n)")
	iters := fs.Int("iters", 20, "timed calls per cell (after one warm-up call)")
	asJSON := fs.Bool("json", false, "print a JSON list of rows instead of the table")
	recal := fs.Bool("recalibrate", false, "cpu: redo the auto calibration sweep instead of using the cache (cuda's auto always calibrates in the run)")
	cacheDir := fs.String("cache-dir", "", "calibration cache directory (default $RIGSCOPE_CACHE_DIR or the user cache dir)")
	ncclProtos := fs.String("nccl-protos", "", "cuda: also time nccl once per protocol in this list (LL, LL128, Simple), each with its own communicators")
	ncclAlgo := fs.String("nccl-algo", "", "cuda: NCCL_ALGO for every nccl group (Ring, Tree, ...; default NCCL's choice)")
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	rankList, err := parseRanks(*ranksFlag)
	if err != nil {
		return err
	}
	sizes, err := parseSizes(*sizesFlag)
	if err != nil {
		return err
	}
	if *iters < 1 {
		return fmt.Errorf("allreduce-bench: --iters %d: must be at least 1", *iters)
	}
	switch *device {
	case "cpu":
		if *ncclProtos != "" || *ncclAlgo != "" {
			return fmt.Errorf("allreduce-bench: --nccl-protos and --nccl-algo set NCCL's choices for GPU ranks; add --device cuda")
		}
		if err := checkBenchMemory(rankList, sizes); err != nil {
			return err
		}
	case "cuda":
		gb, err := parseGPUBackends(*backendFlag)
		if err != nil {
			return err
		}
		var protos []string
		if *ncclProtos != "" {
			protos = strings.Split(*ncclProtos, ",")
		}
		for _, p := range protos {
			if err := (cuda.NCCLSettings{Proto: p, Algo: *ncclAlgo}).Check(); err != nil {
				return fmt.Errorf("allreduce-bench: %w", err)
			}
		}
		if err := (cuda.NCCLSettings{Algo: *ncclAlgo}).Check(); err != nil {
			return fmt.Errorf("allreduce-bench: %w", err)
		}
		return runCUDAAllReduceBench(ctx, gpuBenchConfig{Backends: gb, Ranks: rankList, Sizes: sizes, Iters: *iters,
			JSON: *asJSON, ShareGPU: *shareGPU, Latency: *latency, NCCLProtos: protos, NCCLAlgo: *ncclAlgo}, stdout, stderr)
	default:
		return fmt.Errorf("allreduce-bench: --device %q: want cpu or cuda", *device)
	}
	backends, err := parseBackends(*backendFlag)
	if err != nil {
		return err
	}
	var rows []benchRow
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	if !*asJSON {
		fmt.Fprintf(stdout, "# rigscope allreduce-bench: float32 sum in place; CPU ranks are goroutines on %d cores; %d iters\n", runtime.NumCPU(), *iters)
	}
	for _, n := range rankList {
		groups := make([]*tp.Group, len(backends))
		for i, b := range backends {
			opts := tp.GroupOptions{CacheDir: *cacheDir}
			if b == "auto" && *recal {
				t, err := tp.Recalibrate(ctx, n, opts)
				if err != nil {
					return err
				}
				opts.Auto = t
			}
			if groups[i], err = tp.NewGroup(b, n, opts); err != nil {
				return err
			}
			if t := groups[i].AutoTable(); t != nil {
				fmt.Fprintf(stderr, "auto, %d ranks: table %s (%s)\n", n, t.Source, t.Note)
			}
		}
		if !*asJSON {
			fmt.Fprintf(stdout, "#\n# ranks %d\n", n)
			fmt.Fprintln(tw, "# size\tcount\ttype\tbackend\ttime(us)\talgbw(GB/s)\tbusbw(GB/s)\tmaxrelerr\t")
		}
		for _, size := range sizes {
			elems := int(size / 4)
			in := tp.RandomInputs(n, elems, uint64(size))
			ref := make([]float64, elems)
			var refMax float64
			for _, x := range in {
				for i, v := range x {
					ref[i] += float64(v)
				}
			}
			for _, v := range ref {
				refMax = max(refMax, math.Abs(v))
			}
			bufs := make([][]float32, n)
			for i, g := range groups {
				for r := range bufs {
					bufs[r] = append(bufs[r][:0], in[r]...)
				}
				if _, err := tp.Measure(ctx, g, bufs, 1); err != nil { // warm-up, and the error check
					return err
				}
				var maxErr float64
				for j, v := range bufs[0] {
					maxErr = max(maxErr, math.Abs(float64(v)-ref[j]))
				}
				d, err := tp.Measure(ctx, g, bufs, *iters)
				if err != nil {
					return err
				}
				row := benchRow{Backend: backends[i], Ranks: n, Bytes: size, Count: int64(elems), Type: "float",
					TimeUs: float64(d.Nanoseconds()) / 1e3, MaxRelErr: maxErr / max(refMax, math.SmallestNonzeroFloat64)}
				row.AlgBW = float64(size) / d.Seconds() / 1e9
				row.BusBW = row.AlgBW * 2 * float64(n-1) / float64(n)
				if t := g.AutoTable(); t != nil {
					row.Picked = t.Pick(size)
				}
				rows = append(rows, row)
				if !*asJSON {
					name := row.Backend
					if row.Picked != "" {
						name += "(" + row.Picked + ")"
					}
					fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%.1f\t%.3f\t%.3f\t%.1e\t\n", size, elems, row.Type, name, row.TimeUs, row.AlgBW, row.BusBW, row.MaxRelErr)
				}
			}
		}
		if !*asJSON {
			tw.Flush()
			for _, g := range groups {
				if t := g.AutoTable(); t != nil {
					fmt.Fprintf(stdout, "# auto, %d ranks: %s\n", n, t.Describe())
				}
			}
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	return nil
}

func parseBackends(s string) ([]string, error) {
	if s == "all" {
		return tp.Names(), nil
	}
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if err := tp.CheckBackend(name); err != nil {
			return nil, fmt.Errorf("allreduce-bench: --backend: %w", err)
		}
		out = append(out, name)
	}
	return out, nil
}

func parseRanks(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > tp.MaxRanks {
			return nil, fmt.Errorf("allreduce-bench: --ranks %q: %q is not a group size (1 to %d)", s, f, tp.MaxRanks)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseSizes reads FIRST:LAST (doubling) or A,B,C; sizes are bytes with an
// optional K, M or G (powers of 1024) and must be whole float32s.
func parseSizes(s string) ([]int64, error) {
	one := func(f string) (int64, error) {
		f = strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(f)), "B")
		mult := int64(1)
		switch {
		case strings.HasSuffix(f, "K"):
			mult, f = 1<<10, f[:len(f)-1]
		case strings.HasSuffix(f, "M"):
			mult, f = 1<<20, f[:len(f)-1]
		case strings.HasSuffix(f, "G"):
			mult, f = 1<<30, f[:len(f)-1]
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 1 || n > (4<<30)/mult {
			return 0, fmt.Errorf("allreduce-bench: --sizes %q: bad size %q (bytes, up to 4G, with K, M or G)", s, f)
		}
		if n*mult%4 != 0 {
			return 0, fmt.Errorf("allreduce-bench: --sizes %q: %d bytes is not a whole number of float32s", s, n*mult)
		}
		return n * mult, nil
	}
	if lo, hi, ok := strings.Cut(s, ":"); ok {
		a, err := one(lo)
		if err != nil {
			return nil, err
		}
		b, err := one(hi)
		if err != nil {
			return nil, err
		}
		if b < a {
			return nil, fmt.Errorf("allreduce-bench: --sizes %q: the range runs backwards", s)
		}
		var out []int64
		for v := a; v <= b; v *= 2 {
			out = append(out, v)
		}
		return out, nil
	}
	var out []int64
	for _, f := range strings.Split(s, ",") {
		v, err := one(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("allreduce-bench: --sizes: empty")
	}
	return out, nil
}

// checkBenchMemory refuses a CPU sweep whose largest cell would not fit in
// the available memory: per rank the input, the buffer reduced in place and
// the group's wire buffer, plus the float64 reference.
func checkBenchMemory(ranks []int, sizes []int64) error {
	n, size := int64(slices.Max(ranks)), slices.Max(sizes)
	avail, err := sysmem.Available()
	if err != nil {
		return nil // the kernel does not say: nothing to check against
	}
	if need := (3*n + 2) * size; need > avail {
		return fmt.Errorf("allreduce-bench: %d ranks x %s per rank needs about %s, and this machine has %s available (MemAvailable); lower --ranks or --sizes",
			n, tp.FormatBytes(size), sysmem.GiB(need), sysmem.GiB(avail))
	}
	return nil
}
