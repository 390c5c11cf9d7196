//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"unsafe"

	"gorgonia.org/cu"
)

// The attention trace (-checks attntrace, a measurement: it needs an image
// built with nvcc -DATT_TRACE, loaded through RIGSCOPE_CUDA_PTX;
// kernels/attn_common.cu att_trace): graphed decode steps of the llama-8b
// shape (synthetic bf16 weights, bf16 cache) at 511 cached positions,
// where thread 0 of every attention block stamps its phases. The stamps
// that survive a step are its last layer's. Printed per plan (the fixed
// chunks, the default; the split by length): each block's phases in SM
// cycles and its span on the globaltimer, then where the merging block's
// time went, for a few steps.

// attnTraceSlots is att_trace's row (kernels/attn_common.cu).
const attnTraceSlots = 32

// checkAttnTrace runs the trace; an image without att_trace is refused
// with how to build one.
func checkAttnTrace(ctx context.Context, d *Device, stdout io.Writer) error {
	p, size, err := d.mod.Global("att_trace")
	if err != nil {
		return fmt.Errorf("cuda-check: attntrace: the kernel image has no att_trace (build one with nvcc -DATT_TRACE and load it through RIGSCOPE_CUDA_PTX): %v", err)
	}
	cfg := llama8bConfig
	t, err := loadSyntheticKV(d, cfg, 1, 1024, 1, kvBF16)
	if err != nil {
		return fmt.Errorf("cuda-check: attntrace: %w", err)
	}
	defer t.Close()
	if err := FillRandom(ctx, t, 511, rand.New(rand.NewPCG(1, 2))); err != nil {
		return fmt.Errorf("cuda-check: attntrace fill: %w", err)
	}
	def := kvRowPlan{t.ap.chunk, t.ap.group, t.ap.one}
	rows := make([][attnTraceSlots]uint64, size/(8*attnTraceSlots))
	for _, rp := range []kvRowPlan{def, {0, 1, false}} {
		if err := withAttnPlan(t, rp); err != nil {
			return fmt.Errorf("cuda-check: attntrace: %w", err)
		}
		if _, err := timeDecode(ctx, t, 3); err != nil { // capture, warm
			return fmt.Errorf("cuda-check: attntrace: %w", err)
		}
		fmt.Fprintf(stdout, "\n## attention trace, plan %v (chunk/group/one; chunk 0: split by length), grid %d x %d, decode at 511 cached\n", rp, cfg.KVHeads, t.ap.S)
		for rep := range 4 {
			if err := t.in(t.ranks[0].rd, func() error { return cu.MemsetD32(p, 0, size/4) }); err != nil {
				return fmt.Errorf("cuda-check: attntrace: clearing: %w", err)
			}
			if _, err := timeDecode(ctx, t, 1); err != nil {
				return fmt.Errorf("cuda-check: attntrace: %w", err)
			}
			if err := t.in(t.ranks[0].rd, func() error { return cu.MemcpyDtoH(unsafe.Pointer(&rows[0][0]), p, size) }); err != nil {
				return fmt.Errorf("cuda-check: attntrace: reading: %w", err)
			}
			attnTraceReport(stdout, rows[:cfg.KVHeads*t.ap.S], rep == 0)
		}
	}
	return withAttnPlan(t, def)
}

// attnTraceReport prints one launch's stamps: with all, a row per block
// (ns from the first block's start on the globaltimer; phases in cycles:
// pdl = start to pdl_wait's return, pro = the prologue, chunks, arrive =
// the handshake, merge), then the summary: the span from the first
// block's return from pdl_wait to the last block's end, and the merging
// block's phases.
func attnTraceReport(w io.Writer, rows [][attnTraceSlots]uint64, all bool) {
	g0, gp := uint64(1<<63), uint64(1<<63)
	var gEnd uint64
	for _, r := range rows {
		if r[0] == 0 {
			continue
		}
		g0, gEnd = min(g0, r[0]), max(gEnd, r[2])
		if r[1] != 0 {
			gp = min(gp, r[1])
		}
	}
	if g0 == 1<<63 {
		fmt.Fprintln(w, "no stamps (is the image a -DATT_TRACE build?)")
		return
	}
	ph := func(r [attnTraceSlots]uint64, a, b int) int64 {
		if r[a] == 0 || r[b] == 0 {
			return -1
		}
		return int64(r[b] - r[a])
	}
	rel := func(v uint64) int64 {
		if v == 0 {
			return -1
		}
		return int64(v - g0)
	}
	if all {
		fmt.Fprintf(w, "%5s %3s %5s %4s %8s %8s %8s | %7s %7s %7s %7s %7s %7s\n", "block", "sm", "flags", "", "start", "pdl", "end", "pdl", "pro", "chunks", "arrive", "merge", "total")
	}
	var merger [attnTraceSlots]uint64
	var totals []int64
	for i, r := range rows {
		if r[0] == 0 {
			continue
		}
		if r[9]&4 != 0 {
			merger = r
		}
		totals = append(totals, ph(r, 4, 8))
		if all {
			fmt.Fprintf(w, "%5d %3d %5d %4s %8d %8d %8d | %7d %7d %7d %7d %7d %7d\n", i, r[10], r[9], "", rel(r[0]), rel(r[1]), rel(r[2]),
				ph(r, 3, 4), ph(r, 4, 5), ph(r, 5, 6), ph(r, 6, 7), ph(r, 7, 8), ph(r, 4, 8))
		}
	}
	slices.Sort(totals)
	// The fixed chunks' sub-phases (0 where the plan has none): the
	// prologue's query RoPE and new-slot stores; the first subchunk's put
	// of K, scores, update, put of V, V products, flush; the grouped
	// merge's max and first 4 groups.
	sub := func(r [attnTraceSlots]uint64) string {
		return fmt.Sprintf("rope %d, stores %d, sync %d | pre %d, put K %d, scores %d, update %d, put V %d, V %d, flush %d | max %d, groups %d %d %d %d",
			ph(r, 4, 24), ph(r, 24, 25), ph(r, 25, 5), ph(r, 5, 11), ph(r, 11, 12), ph(r, 12, 13), ph(r, 13, 14), ph(r, 14, 15), ph(r, 15, 16), ph(r, 16, 17),
			ph(r, 7, 18), ph(r, 18, 19), ph(r, 19, 20), ph(r, 20, 21), ph(r, 21, 22))
	}
	if all {
		for i, r := range rows {
			if r[0] != 0 && r[11] != 0 {
				fmt.Fprintf(w, "  block %d (flags %d): %s\n", i, r[9], sub(r))
			}
		}
	}
	fmt.Fprintf(w, "merging block's sub-phases: %s\n", sub(merger))
	fmt.Fprintf(w, "launch: first start to last end %d ns, first pdl return to last end %d ns; blocks' cycles after pdl: median %d, max %d; merging block (sm %d): pdl %d, pro %d, chunks %d, arrive %d, merge %d cycles, end at %d ns\n",
		gEnd-g0, int64(gEnd)-int64(gp), totals[len(totals)/2], totals[len(totals)-1], merger[10],
		ph(merger, 3, 4), ph(merger, 4, 5), ph(merger, 5, 6), ph(merger, 6, 7), ph(merger, 7, 8), rel(merger[2]))
}
