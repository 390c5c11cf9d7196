package benchcpu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"syscall"
	"time"

	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/sample"
	"rigscope/engine/tensor/cpu"
	"rigscope/internal/sysmem"
)

// benchWorker measures one model as cbench does: tg = nGen greedy
// single-token decodes after the 5-token prompt "package main\n\n" (BOS
// first; only the decodes are timed), pp = one nPP-token batch with logits
// for the last token. One warm-up of each, then reps timed runs.
func benchWorker(ctx context.Context, path string, threads, nGen, nPP, reps int, profile string, trace io.Writer) (*benchResult, error) {
	base, _ := sysmem.ReadProcess() // without /proc the column stays empty
	memStage(trace, "start")
	src, err := loader.Open(path, loader.Options{})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	memStage(trace, "opened")
	w, err := model.LoadWeights(src, model.Shard{Size: 1})
	if err != nil {
		return nil, err
	}
	memStage(trace, "weights")
	run := model.NewRunner(w, 1024, nil, cpu.NewPool(threads))
	memStage(trace, "runner")
	vocab := w.Cfg.Vocab
	prompt := []int32{1, 3, 4, 5, 6}
	if tok, err := src.Tokenizer(); err == nil {
		if ids := tok.Encode("package main\n\n", true); len(ids) > 0 {
			prompt = ids
		}
	}
	if nPP+len(prompt)+nGen > run.KV.Slots {
		return nil, errors.New("bench-cpu: --tg/--pp exceed the 1024-position cache")
	}
	logits := make([]float32, vocab)
	tg := func() (float64, error) {
		if err := run.KV.Rewind(0); err != nil {
			return 0, err
		}
		if err := run.Forward(ctx, model.Batch{Tokens: prompt, Logits: model.LogitsLast}, logits); err != nil {
			return 0, err
		}
		next := sample.Argmax(logits)
		t0 := time.Now()
		for i := 0; i < nGen; i++ {
			if err := run.Forward(ctx, model.Batch{Tokens: []int32{next}, Logits: model.LogitsLast}, logits); err != nil {
				return 0, err
			}
			next = sample.Argmax(logits)
		}
		return float64(nGen) / time.Since(t0).Seconds(), nil
	}
	pp := make([]int32, nPP)
	for i := range pp {
		pp[i] = int32(3 + (uint32(i)*2654435761)%uint32(vocab-3))
	}
	pp[0] = 1
	ppRun := func() (float64, error) {
		if err := run.KV.Rewind(0); err != nil {
			return 0, err
		}
		t0 := time.Now()
		if err := run.Forward(ctx, model.Batch{Tokens: pp, Logits: model.LogitsLast}, logits); err != nil {
			return 0, err
		}
		return float64(nPP) / time.Since(t0).Seconds(), nil
	}
	res := &benchResult{KVMB: float64(run.KV.Bytes()) / (1 << 20), BaseKB: base.RSS}
	if _, err := tg(); err != nil {
		return nil, err
	}
	memStage(trace, "tg")
	if _, err := ppRun(); err != nil {
		return nil, err
	}
	memStage(trace, "pp")
	if profile != "" {
		fh, err := os.Create(profile)
		if err != nil {
			return nil, fmt.Errorf("bench-cpu: %w", err)
		}
		defer fh.Close()
		if err := pprof.StartCPUProfile(fh); err != nil {
			return nil, fmt.Errorf("bench-cpu: cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	for i := 0; i < reps; i++ {
		v, err := tg()
		if err != nil {
			return nil, err
		}
		res.TG = append(res.TG, v)
	}
	for i := 0; i < reps; i++ {
		v, err := ppRun()
		if err != nil {
			return nil, err
		}
		res.PP = append(res.PP, v)
	}
	memStage(trace, "timed")
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		res.RSSKB = ru.Maxrss
	}
	return res, nil
}

// memStage prints the process's memory and the Go heap at a stage of the
// worker (nothing when w is nil).
func memStage(w io.Writer, stage string) {
	if w == nil {
		return
	}
	m, err := sysmem.ReadProcess()
	if err != nil {
		fmt.Fprintln(w, fmt.Errorf("bench-cpu: %w", err))
		return
	}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	mb := func(i int) float64 { return float64(s[i].Value.Uint64()) / (1 << 20) }
	fmt.Fprintf(w, "mem %-12s VmRSS %6.1f MiB HWM %6.1f (anon %6.1f file %6.1f shmem %4.1f) | go heap objects %6.1f MiB, goal %6.1f, runtime total %6.1f, released %5.1f\n",
		stage, float64(m.RSS)/1024, float64(m.HWM)/1024, float64(m.Anon)/1024, float64(m.File)/1024, float64(m.Shmem)/1024, mb(0), mb(3), mb(1), mb(2))
}
