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

// sampleThreads is SMP_THREADS in kernels/sample.cu: one block per row.
const sampleThreads = 1024

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
	fn, err := d.fn("sample_row")
	if err != nil {
		return err
	}
	for r, x := range u {
		off := cu.DevicePtr(4 * r * vocab)
		inf := cu.DevicePtr(0)
		if info != 0 {
			inf = info + cu.DevicePtr(4*r)
		}
		if err := launch(fn, [3]int{1, 1, 1}, [3]int{sampleThreads, 1, 1}, 0, s,
			ptr(ids+cu.DevicePtr(4*r)), ptr(inf), ptr(logits+off), ptr(prob+off), i32(vocab),
			f32(p.Temperature), i32(p.TopK), f32(p.TopP), math.Float64bits(x)); err != nil {
			return fmt.Errorf("cuda: sample row %d: %w", r, err)
		}
	}
	return nil
}

// SampleIDs implements spec.SampleTarget: the step runs as ForwardIDs runs
// it (the same captured graph, its argmax ignored), then sample_row picks
// each logits row's token on the device with the host's uniform number, as
// sample.Sampler.SampleU would over the row, and only the ids (4 bytes a
// row) come back. The rows' logits on the device are overwritten with
// their probabilities.
//
// Only plain sampled steps come here: speculative verification at
// temperature > 0 needs the target's probabilities on the host (rejection
// sampling against the drafter's q) and calls Forward.
func (t *Target) SampleIDs(ctx context.Context, b model.Batch, p sample.Params, u []float64) ([]int32, error) {
	if err := checkSampleParams(p, u); err != nil {
		return nil, err
	}
	if b.Logits == model.LogitsAll && len(b.Tokens) > MaxTokens {
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
	if err := cu.MemcpyDtoHAsync(t.hids.p, t.ids, int64(4*rows), t.stream); err != nil {
		return nil, fmt.Errorf("cuda: copy sampled ids back: %w", err)
	}
	if err := t.stream.Synchronize(); err != nil {
		return nil, fmt.Errorf("cuda: sample %d rows: %w", rows, err)
	}
	t.outIDs = grow(t.outIDs, rows)
	copy(t.outIDs, t.hids.ints()[:rows])
	return append([]int32(nil), t.outIDs[:rows]...), nil
}
