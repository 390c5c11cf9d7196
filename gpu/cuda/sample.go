//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"math"

	"gorgonia.org/cu"

	"rigscope/engine/model"
	"rigscope/engine/sample"
)

// sampleKernels are the kernels that sample a row (one block a row) and
// their block sizes: sample_row (kernels/sample.cu, SMP_THREADS) and
// sample_row_bins (kernels/sample_bins.cu, SMB_THREADS), which compute the
// same result; sampleKernel is the one steps launch.
var sampleKernels = map[string]int{"sample_row": 1024, "sample_row_bins": 256}

// sampleKernelFor is the kernel steps launch for a vocabulary: the shared
// memory bins (256 threads) up to 16,384 entries, where they take half the
// time (H200, V=4096, top-p: 37.5 against 66.8 us); above, 1024 threads
// hide the softmax's float64 latency better (V=128,256: 536 against 1,303).
func sampleKernelFor(vocab int) string {
	if vocab <= 16384 {
		return "sample_row_bins"
	}
	return "sample_row"
}

// checkSampleParams refuses settings sample_row does not implement the way
// engine/sample does (greedy is ForwardIDs' argmax) and uniforms outside
// [0, 1).
func checkSampleParams(p sample.Params, u []float64) error {
	switch {
	case p.Greedy():
		return fmt.Errorf("cuda: device sampling asked with temperature %g; greedy steps take the argmax (ForwardIDs)", p.Temperature)
	case math.IsInf(float64(p.Temperature), 0) || math.IsNaN(float64(p.Temperature)):
		return fmt.Errorf("cuda: device sampling: temperature %g", p.Temperature)
	case math.IsNaN(float64(p.TopP)):
		return fmt.Errorf("cuda: device sampling: top-p is NaN")
	}
	for i, x := range u {
		if !(x >= 0 && x < 1) {
			return fmt.Errorf("cuda: device sampling: uniform number %d is %g, outside [0, 1)", i, x)
		}
	}
	return nil
}

// enqueueSample launches sample_row on stream s over rows logits rows
// (rows, vocab) float32 at logits, writing the probabilities into prob
// (which may be logits itself) and row r's id into ids[r] (and, when info
// is set, its kept-set size into info[r]).
func enqueueSample(d *Device, s cu.Stream, ids, info, logits, prob cu.DevicePtr, vocab int, p sample.Params, u []float64) error {
	return enqueueSampleWith(d, sampleKernelFor(vocab), s, ids, info, logits, prob, vocab, p, u)
}

// enqueueSampleWith is enqueueSample with the kernel named (sampleKernels).
func enqueueSampleWith(d *Device, kernel string, s cu.Stream, ids, info, logits, prob cu.DevicePtr, vocab int, p sample.Params, u []float64) error {
	threads, ok := sampleKernels[kernel]
	if !ok {
		return fmt.Errorf("cuda: no sampling kernel %q", kernel)
	}
	fn, err := d.fn(kernel)
	if err != nil {
		return err
	}
	for r, x := range u {
		off := cu.DevicePtr(4 * r * vocab)
		inf := cu.DevicePtr(0)
		if info != 0 {
			inf = info + cu.DevicePtr(4*r)
		}
		if err := launch(fn, [3]int{1, 1, 1}, [3]int{threads, 1, 1}, 0, s,
			ptr(ids+cu.DevicePtr(4*r)), ptr(inf), ptr(logits+off), ptr(prob+off), i32(vocab),
			f32(p.Temperature), i32(p.TopK), f32(p.TopP), math.Float64bits(x)); err != nil {
			return fmt.Errorf("cuda: %s row %d: %w", kernel, r, err)
		}
	}
	return nil
}

// sampleStep is what SampleIDs hands exec: the settings and one uniform
// number per logits row.
type sampleStep struct {
	p sample.Params
	u []float64
}

// SampleIDs implements spec.SampleTarget: the step runs as ForwardIDs runs
// it, but its graph (keyed apart: graphKey.sampled) leaves out the argmax,
// and exec launches sample_row after it, before the ids copy, so a sampled
// token costs one synchronize as a greedy one does: each logits row's token
// is picked on the device with the host's uniform number, as
// sample.Sampler.SampleU picks it over the row (the same bits: see
// kernels/sample.cu), and only the ids (4 bytes a row) come back. The
// rows' logits on the device are overwritten with their probabilities.
//
// A batch longer than MaxTokens (a prompt on the prefill or chunked path)
// runs as ForwardIDs and samples its last rows after it (once a prompt).
// Only plain sampled steps come here: speculative verification at
// temperature > 0 needs the target's probabilities on the host (rejection
// sampling against the drafter's q) and calls Forward.
func (t *Target) SampleIDs(ctx context.Context, b model.Batch, p sample.Params, u []float64) ([]int32, error) {
	if err := checkSampleParams(p, u); err != nil {
		return nil, err
	}
	if len(b.Tokens) <= MaxTokens {
		want := 0
		switch b.Logits {
		case model.LogitsLast:
			want = 1
		case model.LogitsAll:
			want = len(b.Tokens)
		}
		if want != len(u) {
			return nil, fmt.Errorf("cuda: %d logits rows and %d uniform numbers", want, len(u))
		}
		t.smp = &sampleStep{p, u}
		rows, err := t.exec(ctx, b, true, 0, true, nil)
		t.smp = nil
		if err != nil || rows == 0 {
			return nil, err
		}
		return append([]int32(nil), t.outIDs[:rows]...), nil
	}
	if b.Logits == model.LogitsAll {
		// The chunked path keeps only its last chunk's rows on the device.
		return nil, fmt.Errorf("cuda: device sampling of every row of %d tokens; at most %d rows a call", len(b.Tokens), MaxTokens)
	}
	rows, err := t.forward(ctx, b, true)
	if err != nil {
		return nil, err
	}
	if rows != len(u) {
		return nil, fmt.Errorf("cuda: %d logits rows and %d uniform numbers", rows, len(u))
	}
	if rows == 0 {
		return nil, nil
	}
	unbind, err := t.dev.Bind()
	if err != nil {
		return nil, err
	}
	defer unbind()
	if err := enqueueSample(t.dev, t.stream, t.ids, 0, t.logits, t.logits, t.cfg.Vocab, p, u); err != nil {
		return nil, err
	}
	if err := t.stream.Synchronize(); err != nil {
		return nil, fmt.Errorf("cuda: sample %d rows: %w", rows, err)
	}
	t.outIDs = grow(t.outIDs, rows)
	copy(t.outIDs, t.hids.ints()[:rows])
	return append([]int32(nil), t.outIDs[:rows]...), nil
}
