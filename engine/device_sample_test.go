package engine

import (
	"context"
	"slices"
	"testing"

	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/sample"
	"rigscope/engine/spec"
)

// sampleGPUTarget is a fake device target that samples "on the device"
// (spec.SampleTarget) with the host's specification, counting its calls.
type sampleGPUTarget struct {
	*fakeGPUTarget
	samples int
}

func (t *sampleGPUTarget) SampleIDs(ctx context.Context, b model.Batch, p sample.Params, u []float64) ([]int32, error) {
	t.samples++
	logits, err := t.Forward(ctx, b)
	if err != nil {
		return nil, err
	}
	v := t.Vocab()
	s, scratch := &sample.Sampler{P: p}, make([]float32, v)
	ids := make([]int32, len(u))
	for i := range ids {
		ids[i] = s.SampleU(logits[i*v:(i+1)*v], scratch, u[i])
	}
	return ids, nil
}

// The engine's device wrapper keeps a device's sampler visible: a sampled
// run on a device with SampleIDs samples every token there, and emits what
// a device without it emits (host sampling over the logits) with the same
// seed; greedy runs never call it.
func TestDeviceSampleIDsThroughEngine(t *testing.T) {
	var last *sampleGPUTarget
	f := &fakeGPU{}
	withSampler := func(src loader.Source, tpN int, gpus []int, ctxLen int) (spec.Target, error) {
		tg, err := f.target(src, tpN, gpus, ctxLen)
		if err != nil {
			return nil, err
		}
		last = &sampleGPUTarget{fakeGPUTarget: tg.(*fakeGPUTarget)}
		return last, nil
	}
	RegisterDevice("fakegpu-sample", Device{Target: withSampler, Backends: fakeGPUBackends})
	RegisterDevice("fakegpu-host", Device{Target: f.target, Backends: fakeGPUBackends})
	ctx := context.Background()
	const n = 12
	run := func(device string, s Sampling) []int32 {
		e, err := Open(ctx, "synthetic:tiny", Options{CtxLen: 128, Device: device, GPUs: []int{0}})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		var toks []int32
		_, err = e.Run(ctx, RunConfig{PromptIDs: []int32{1, 2, 3}, MaxTokens: n, IgnoreEOS: true, TP: 1, Sampling: s}, func(ev Event) {
			for _, tk := range ev.Tokens {
				toks = append(toks, tk.ID)
			}
		})
		if err != nil {
			t.Fatalf("%s %+v: %v", device, s, err)
		}
		return toks
	}
	cases := []struct {
		name    string
		s       Sampling
		samples int
	}{
		{"top-p", Sampling{Temperature: 0.8, TopP: 0.9, Seed: 3}, n},
		{"top-k", Sampling{Temperature: 1.1, TopK: 7, Seed: 4}, n},
		{"greedy", Sampling{}, 0},
	}
	for _, c := range cases {
		want := run("fakegpu-host", c.s)
		got := run("fakegpu-sample", c.s)
		if !slices.Equal(got, want) || len(got) != n {
			t.Errorf("%s: device sampling %v, host sampling %v", c.name, got, want)
		}
		if last.samples != c.samples {
			t.Errorf("%s: SampleIDs called %d times, want %d", c.name, last.samples, c.samples)
		}
	}
}
