package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/spec"
	"rigscope/engine/tensor/cpu"
	"rigscope/engine/tp"
)

// fakeGPU is a registered device whose target is the CPU runner (unsharded)
// with a device-side allreduce that records what the engine asked of it:
// how the engine loads, swaps backends and reads the measurements.
type fakeGPU struct {
	loads   int
	gpus    []int
	backend []string
}

type fakeGPUTarget struct {
	spec.Target
	d     *fakeGPU
	o     tp.GroupOptions
	b     string
	total time.Duration
}

func (f *fakeGPU) target(src loader.Source, tpN int, gpus []int, ctxLen int) (spec.Target, error) {
	f.loads++
	f.gpus = gpus
	w, err := model.LoadWeights(src, model.Shard{Rank: 0, Size: 1})
	if err != nil {
		return nil, err
	}
	return &fakeGPUTarget{Target: spec.NewRunnerTarget(model.NewRunner(w, ctxLen, nil, cpu.NewPool(1))), d: f}, nil
}

func (t *fakeGPUTarget) SetAllReduce(_ context.Context, backend string, o tp.GroupOptions) error {
	if !slices.Contains([]string{"oneshot", "twoshot", "host", "auto"}, backend) {
		return fmt.Errorf("fakegpu: allreduce %q refused", backend)
	}
	t.d.backend = append(t.d.backend, backend)
	t.o, t.b, t.total = o, backend, 0
	return nil
}

// Forward counts one 5 us allreduce call per forward on each rank.
func (t *fakeGPUTarget) Forward(ctx context.Context, b model.Batch) ([]float32, error) {
	if t.o.Latency != nil {
		for r := range t.o.Bytes.Ranks() {
			t.o.Latency.Record(t.b, 4096, 5*time.Microsecond)
			t.o.Bytes.Add(r, 4096, 4096)
		}
	}
	t.total += 5 * time.Microsecond
	return t.Target.Forward(ctx, b)
}

func (t *fakeGPUTarget) AllReduceTime() time.Duration  { return t.total }
func (t *fakeGPUTarget) AllReduceTable() *tp.AutoTable { return nil }

func fakeGPUBackends() []tp.BackendInfo {
	return []tp.BackendInfo{{Name: "oneshot", Available: true}, {Name: "host", Available: true}, {Name: "twoshot", Available: true},
		{Name: "auto", Available: true}, {Name: "nccl", Reason: "fake"}}
}

func TestDeviceTargetSwapsBackendWithoutReload(t *testing.T) {
	f := &fakeGPU{}
	RegisterDevice("fakegpu", Device{Target: f.target, Backends: fakeGPUBackends})
	ctx := context.Background()
	e, err := Open(ctx, "synthetic:tiny", Options{CtxLen: 128, Device: "fakegpu", GPUs: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	run := func(tpN int, backend string) (Stats, error) {
		return e.Run(ctx, RunConfig{PromptIDs: []int32{1, 2, 3}, MaxTokens: 8, IgnoreEOS: true, TP: tpN, AllReduce: backend}, func(Event) {})
	}
	for _, b := range []string{"host", "twoshot", "oneshot"} {
		st, err := run(2, b)
		if err != nil {
			t.Fatalf("tp 2 %s: %v", b, err)
		}
		if st.AllReduceMs <= 0 || st.BytesMoved <= 0 || st.AllReduceP50Us != 5 || len(st.AllReduceBySize) != 1 || st.AllReduceBySize[0].Backend != b ||
			len(st.AllReduceLatency) != 1 || st.AllReduceLatency[0].P99 != 5*time.Microsecond {
			t.Errorf("tp 2 %s: stats %v ms, %d bytes, p50 %v us, by size %+v: want the device's measurements", b, st.AllReduceMs, st.BytesMoved, st.AllReduceP50Us, st.AllReduceBySize)
		}
	}
	if f.loads != 1 || !slices.Equal(f.backend, []string{"host", "twoshot", "oneshot"}) || !slices.Equal(f.gpus, []int{0}) {
		t.Errorf("after three backends at TP 2: %d loads (want 1), backends %v, gpus %v", f.loads, f.backend, f.gpus)
	}
	if _, err := run(2, "ring"); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("ring on the device: %v, want the device's refusal", err)
	}
	if _, err := run(1, "host"); err != nil || f.loads != 2 {
		t.Errorf("tp 1: %v, %d loads (want a second load for the new TP size)", err, f.loads)
	}
	// The run settings accept a name some device offers; the device
	// refuses it at run start when it cannot.
	if err := CheckRunConfig(RunConfig{PromptIDs: []int32{1}, AllReduce: "host"}); err != nil {
		t.Errorf("CheckRunConfig(host) with a device offering it: %v", err)
	}
	if err := CheckRunConfig(RunConfig{PromptIDs: []int32{1}, AllReduce: "bogus"}); err == nil {
		t.Error("CheckRunConfig(bogus): accepted")
	}
	if got := AllReduceBackends("fakegpu"); len(got) != 5 {
		t.Errorf("AllReduceBackends(fakegpu) = %v", got)
	}
	if got := AllReduceBackends("cpu"); len(got) != len(tp.Available()) {
		t.Errorf("AllReduceBackends(cpu) = %v", got)
	}
}

func TestGPUsNeedADevice(t *testing.T) {
	_, err := Open(context.Background(), "synthetic:tiny", Options{CtxLen: 128, GPUs: []int{0, 1}})
	if err == nil || !strings.Contains(err.Error(), "--device cuda") {
		t.Errorf("--gpus on the CPU: %v, want a message naming --device cuda", err)
	}
}

// Without --ctx a device target gets the longest context the device says
// fits, when that beats the CPU's default; never more than the model's.
func TestDeviceDefaultContext(t *testing.T) {
	f := &fakeGPU{}
	var asked int64
	for _, tc := range []struct {
		fits, want int
	}{{16384, 16384}, {2048, 4096}, {0, 4096}} {
		RegisterDevice("fakegpu-ctx", Device{Target: f.target, MaxContext: func(cfg model.Config, w int64, tpN int, gpus []int) (int, error) {
			asked = w
			return min(tc.fits, cfg.MaxSeq), nil
		}})
		e, err := Open(context.Background(), "synthetic:tiny-moe", Options{Device: "fakegpu-ctx"})
		if err != nil {
			t.Fatal(err)
		}
		if e.CtxLen() != tc.want || asked <= 0 {
			t.Errorf("device fits %d: context %d (want %d), weights asked %d", tc.fits, e.CtxLen(), tc.want, asked)
		}
		e.Close()
	}
	e, err := Open(context.Background(), "synthetic:tiny-moe", Options{Device: "fakegpu-ctx", CtxLen: 512})
	if err != nil || e.CtxLen() != 512 {
		t.Errorf("--ctx 512 on the device: %v, %v", e, err)
	}
}
