//go:build cuda

package allreduce

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"rigscope/engine/metrics"
	"rigscope/engine/tp"
	"rigscope/gpu/cuda"
)

// gpuBenchOut is --json for --device cuda: the rows plus what the table's
// comments say.
type gpuBenchOut struct {
	Rows    []benchRow                       `json:"rows"`
	Groups  []gpuGroupInfo                   `json:"groups"`
	Latency map[int][]metrics.LatencySummary `json:"latency"` // by ranks
}

type gpuGroupInfo struct {
	Ranks       int               `json:"ranks"`
	GPUs        []int             `json:"gpus"` // rank r's device ordinal
	Shared      bool              `json:"shared"`
	P2P         *cuda.PeerReport  `json:"p2p,omitempty"`
	Unavailable map[string]string `json:"unavailable,omitempty"`
	Auto        *tp.AutoTable     `json:"auto,omitempty"`
	AutoVsNCCL  string            `json:"auto_vs_nccl,omitempty"`
}

func runCUDAAllReduceBench(ctx context.Context, cfg gpuBenchConfig, stdout, stderr io.Writer) error {
	nGPU, err := cuda.Count()
	if err != nil {
		return fmt.Errorf("allreduce-bench --device cuda: %w", err)
	}
	if nGPU == 0 {
		return fmt.Errorf("allreduce-bench --device cuda: %w", cuda.ErrNoGPU)
	}
	opened := map[int]*cuda.Device{}
	open := func(i int) (*cuda.Device, error) {
		if d := opened[i]; d != nil {
			return d, nil
		}
		d, err := cuda.Open(i)
		if err != nil {
			return nil, err
		}
		opened[i] = d
		return d, nil
	}
	d0, err := open(0)
	if err != nil {
		return err
	}
	say := func(format string, a ...any) {
		if !cfg.JSON {
			fmt.Fprintf(stdout, format+"\n", a...)
		}
	}
	say("# rigscope allreduce-bench --device cuda: float32 sum, %d GPU(s), GPU 0 = %s", nGPU, d0)
	say("# oneshot, twoshot, host: the forward step's own allreduce kernels (ars_*: every rank adds the sum into its zeroed output; host through mapped pinned memory); time = median of %d calls (5 from 16M up) timed with CUDA events on rank 0 from the end of a 200 us spin that every GPU runs while the host enqueues the call (host launch latency is not counted), through an entry barrier (skipped by nccl, which synchronizes the ranks itself), to an exit barrier, after one checked call (outputs poisoned first); maxrelerr = max|got-ref|/max|ref| over all ranks, ref = float64 sum", cfg.Iters)
	if v, err := cuda.NCCLVersion(); err != nil {
		say("# nccl: %v", err)
	} else {
		say("# nccl: libnccl.so.2 %s loaded with dlopen (NCCL_NVLS_ENABLE=0)", v)
	}
	want := map[string]bool{}
	for _, b := range cfg.Backends {
		want[b] = true
	}
	maxBytes := cfg.Sizes[0]
	for _, s := range cfg.Sizes {
		maxBytes = max(maxBytes, s)
	}
	out := gpuBenchOut{Latency: map[int][]metrics.LatencySummary{}}
	var failed []string // cells that returned an error
	for _, R := range cfg.Ranks {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		info := gpuGroupInfo{Ranks: R, Unavailable: map[string]string{}}
		devs := make([]*cuda.Device, R)
		if !cfg.ShareGPU && nGPU >= R {
			for r := range devs {
				if devs[r], err = open(r); err != nil {
					return err
				}
			}
		} else {
			for r := range devs {
				devs[r] = d0
			}
		}
		for _, d := range devs {
			info.GPUs = append(info.GPUs, d.Ordinal)
		}
		info.Shared = R > 1 && devs[0] == devs[R-1]
		say("#")
		switch {
		case info.Shared && cfg.ShareGPU:
			say("# ranks %d: all share GPU 0 (%s) (--share-gpu)", R, d0.Name)
		case info.Shared:
			say("# ranks %d: all share GPU 0 (%s): the machine has %d GPU(s), fewer than %d ranks", R, d0.Name, nGPU, R)
		default:
			say("# ranks %d: one per GPU (GPUs %v)", R, info.GPUs)
		}
		if !info.Shared && R > 1 {
			rep, err := cuda.PeerTest(devs)
			if err != nil {
				say("# p2p self-test could not run: %v", err)
			} else {
				info.P2P = rep
				say("# p2p self-test (write a pattern into the peer through its pointer, read the peer's pattern back, checked on the host):")
				for _, p := range rep.Pairs {
					say("#   %s", p)
				}
				for _, line := range strings.Split(rep.Matrix(), "\n") {
					say("#   %s", line)
				}
			}
		}
		lat := metrics.NewLatencySet()
		groups := map[string]*cuda.Group{}
		for _, b := range gpuAutoCandidates {
			if !want[b] && !want["auto"] {
				continue
			}
			var g *cuda.Group
			var err error
			if b == "nccl" && cfg.NCCLAlgo != "" {
				g, err = cuda.NewNCCLGroupOn(devs, int(maxBytes/4), cuda.NCCLSettings{Algo: cfg.NCCLAlgo})
			} else {
				g, err = cuda.NewGroupOn(devs, b, int(maxBytes/4))
			}
			if err != nil {
				info.Unavailable[b] = err.Error()
				say("# %s, %d ranks: unavailable: %v", b, R, err)
				continue
			}
			g.Latency = lat
			groups[b] = g
		}
		for _, s := range cfg.ncclVariants() {
			g, err := cuda.NewNCCLGroupOn(devs, int(maxBytes/4), s)
			if err != nil {
				info.Unavailable[s.String()] = err.Error()
				say("# %s, %d ranks: unavailable: %v", s, R, err)
				continue
			}
			g.Latency = lat
			groups[s.String()] = g
			want[s.String()] = true
		}
		rows, pts, err := gpuBenchSizes(ctx, cfg, R, groups, want, lat, &failed, stdout)
		for _, g := range groups {
			g.Close()
		}
		if err != nil {
			return err
		}
		out.Rows = append(out.Rows, rows...)
		if want["auto"] && len(pts) > 0 {
			if t, err := tp.BuildAutoTable(R, gpuAutoCandidates, gpuExactTol, pts); err == nil {
				info.Auto = t
				say("# auto, %d ranks: %s", R, t.Describe())
			} else {
				say("# allreduce-bench: %v", err)
			}
		}
		if info.AutoVsNCCL = autoVsNCCL(rows); info.AutoVsNCCL != "" {
			say("# %s", info.AutoVsNCCL)
		}
		sums := lat.Summaries()
		out.Latency[R] = sums
		printLatency(stdout, cfg, R, sums)
		out.Groups = append(out.Groups, info)
	}
	if cfg.JSON {
		for i := range out.Rows { // JSON has no NaN: a NaN output is written as -1
			if math.IsNaN(out.Rows[i].MaxRelErr) {
				out.Rows[i].MaxRelErr = -1
			}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("allreduce-bench --device cuda: %d backend(s) failed: %s", len(failed), strings.Join(failed, "; "))
	}
	if bad := inexactRows(out.Rows); len(bad) > 0 { // (-1 in JSON: NaN)
		return fmt.Errorf("allreduce-bench --device cuda: %d cell(s) not exact (max rel err above %.0e): %s", len(bad), gpuExactTol, strings.Join(bad, "; "))
	}
	return nil
}

// variantNames are the row names of --nccl-protos' groups.
func variantNames(cfg gpuBenchConfig) []string {
	var out []string
	for _, s := range cfg.ncclVariants() {
		out = append(out, s.String())
	}
	return out
}

// gpuBenchSizes measures every size on every group (the calibration),
// prints the requested rows and, when asked, auto's row per size: the
// backend the calibration found fastest and exact there, measured again.
func gpuBenchSizes(ctx context.Context, cfg gpuBenchConfig, R int, groups map[string]*cuda.Group, want map[string]bool, lat *metrics.LatencySet, failed *[]string, stdout io.Writer) ([]benchRow, []tp.Measured, error) {
	var tw *tabwriter.Writer
	if !cfg.JSON {
		tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "# size\tcount\ttype\tbackend\ttime(us)\talgbw(GB/s)\tbusbw(GB/s)\tmaxrelerr\t")
	}
	var rows []benchRow
	var pts []tp.Measured
	emit := func(row benchRow) {
		rows = append(rows, row)
		if tw != nil {
			name := row.Backend
			if row.Picked != "" {
				name += "(" + row.Picked + ")"
			}
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%.1f\t%.3f\t%.3f\t%.1e\t\n", row.Bytes, row.Count, row.Type, name, row.TimeUs, row.AlgBW, row.BusBW, row.MaxRelErr)
		}
	}
	for _, size := range cfg.Sizes {
		if err := context.Cause(ctx); err != nil {
			return nil, nil, err
		}
		iters := cfg.Iters
		if size >= 16<<20 {
			iters = min(iters, 5)
		}
		var here []tp.Measured
		for _, b := range append(gpuAutoCandidates, variantNames(cfg)...) {
			g := groups[b]
			if g == nil {
				continue
			}
			row, err := gpuCell(g, b, R, size, iters, nil)
			if err != nil {
				// Keep the other backends' results; this one is out from
				// here on and the run fails at the end.
				*failed = append(*failed, err.Error())
				if tw != nil {
					tw.Flush()
					fmt.Fprintf(stdout, "# %s, %d ranks: FAILED at %d bytes, dropped for larger sizes: %v\n", b, R, size, err)
				}
				g.Close()
				delete(groups, b)
				continue
			}
			here = append(here, tp.Measured{Backend: b, Bytes: size, TimeUs: row.TimeUs, MaxRelErr: row.MaxRelErr})
			if want[b] {
				emit(row)
			}
		}
		pts = append(pts, here...)
		if want["auto"] {
			pick := tp.FastestExact(gpuAutoCandidates, gpuExactTol, here, size)
			if pick == "" {
				continue
			}
			g := groups[pick]
			saved := g.Latency
			g.Latency = nil // recorded under "auto" below
			row, err := gpuCell(g, "auto", R, size, iters, func(d time.Duration) {
				for range R {
					lat.Record("auto", size, d)
				}
			})
			g.Latency = saved
			if err != nil {
				*failed = append(*failed, "auto: "+err.Error())
				continue
			}
			row.Picked = pick
			emit(row)
		}
	}
	if tw != nil {
		tw.Flush()
	}
	return rows, pts, nil
}

// gpuCell checks one (group, size) against the float64 sum, then times
// iters calls (each recorded by the group, or by rec) and reports the
// median.
func gpuCell(g *cuda.Group, name string, R int, size int64, iters int, rec func(time.Duration)) (benchRow, error) {
	elems := int(size / 4)
	rel, err := g.Check(elems, uint32(size)*31+uint32(R))
	if err != nil {
		return benchRow{}, fmt.Errorf("allreduce-bench: %s, %d ranks, %d bytes: %w", g.Backend, R, size, err)
	}
	ts := make([]time.Duration, 0, iters)
	for range iters {
		d, err := g.AllReduce(elems)
		if err != nil {
			return benchRow{}, fmt.Errorf("allreduce-bench: %s, %d ranks, %d bytes: %w", g.Backend, R, size, err)
		}
		if rec != nil {
			rec(d)
		}
		ts = append(ts, d)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	med := ts[len(ts)/2]
	row := benchRow{Backend: name, Ranks: R, Bytes: size, Count: int64(elems), Type: "float",
		TimeUs: float64(med.Nanoseconds()) / 1e3, MaxRelErr: rel}
	if med > 0 {
		row.AlgBW = float64(size) / med.Seconds() / 1e9
		row.BusBW = row.AlgBW * 2 * float64(R-1) / float64(R)
	}
	if math.IsNaN(rel) {
		row.MaxRelErr = math.NaN()
	}
	return row, nil
}

// printLatency says what the latency histograms hold (all with --latency).
func printLatency(w io.Writer, cfg gpuBenchConfig, R int, sums []metrics.LatencySummary) {
	if cfg.JSON {
		return
	}
	if cfg.Latency {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "# latency histograms, %d ranks\tsize\tcalls\tp50(us)\tp99(us)\tmean(us)\t\n", R)
		for _, s := range sums {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t\n", s.Backend, tp.FormatBytes(s.Bytes), s.Count,
				float64(s.P50.Nanoseconds())/1e3, float64(s.P99.Nanoseconds())/1e3, float64(s.Mean.Nanoseconds())/1e3)
		}
		tw.Flush()
		return
	}
	per := map[string]int64{}
	var names []string
	for _, s := range sums {
		if _, ok := per[s.Backend]; !ok {
			names = append(names, s.Backend)
		}
		per[s.Backend] += s.Count
	}
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %d", n, per[n]))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "# latency histograms, %d ranks (calls x ranks recorded; --latency prints p50/p99): %s\n", R, strings.Join(parts, ", "))
	}
}
