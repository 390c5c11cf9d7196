package model_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"rigscope/engine/loader/synthetic"
	"rigscope/engine/model"

	"rigscope/engine/tensor/cpu"
)

func tinySource(t *testing.T, spec string) *synthetic.Source {
	t.Helper()
	src, err := synthetic.Open(spec)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func newRunner(t *testing.T, src model.WeightSource) *model.Runner {
	t.Helper()
	w, err := model.LoadWeights(src, model.Shard{Rank: 0, Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	return model.NewRunner(w, 256, nil, cpu.NewPool(2))
}

func maxDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(float64(a[i]-b[i])))
	}
	return m
}

var prompt = []int32{1, 40, 41, 42, 300, 7, 9, 100, 200, 13, 77, 5}

// firstBitDiff is the index of the first element whose bits differ, or -1.
func firstBitDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// Prefill in one batch (or in batches of any size, as speculative
// verification runs) must give bit for bit the logits of feeding the tokens
// one at a time: every kernel reduces each output element in an order that
// does not depend on the batch size.
func TestPrefillEqualsDecode(t *testing.T) {
	long := append(append(append([]int32{}, prompt...), prompt...), 3, 4, 5) // 27 tokens: the threaded row-wise path
	for _, spec := range []string{"tiny", "tiny?dtype=f16", "tiny?dtype=bf16", "tiny?dtype=q8_0", "tiny?dtype=q4_0",
		"small?dtype=q4_k&layers=1", "small?dtype=q6_k&layers=1"} {
		src := tinySource(t, spec)
		V := src.Config().Vocab
		r := newRunner(t, src)
		one := make([]float32, len(long)*V)
		for i, tok := range long {
			if err := r.Forward(context.Background(), model.Batch{Tokens: []int32{tok}}, one[i*V:(i+1)*V]); err != nil {
				t.Fatal(err)
			}
		}
		for _, batch := range []int{len(long), 5, 2} {
			r.KV.Rewind(0)
			all := make([]float32, len(long)*V)
			for t0 := 0; t0 < len(long); t0 += batch {
				t1 := min(t0+batch, len(long))
				if err := r.Forward(context.Background(), model.Batch{Tokens: long[t0:t1], Logits: model.LogitsAll}, all[t0*V:t1*V]); err != nil {
					t.Fatal(err)
				}
			}
			for i := range long {
				if j := firstBitDiff(one[i*V:(i+1)*V], all[i*V:(i+1)*V]); j >= 0 {
					t.Errorf("%s: token %d, batches of %d: logit %d = %v, decode gives %v (max diff %g)",
						spec, i, batch, j, all[i*V+j], one[i*V+j], maxDiff(one[i*V:(i+1)*V], all[i*V:(i+1)*V]))
					break
				}
			}
		}
	}
}

// A tree batch must give each node the logits of the chain along its path.
func TestTreeEqualsChains(t *testing.T) {
	for _, spec := range []string{"tiny", "tiny?dtype=f16", "tiny?dtype=q8_0"} {
		t.Run(spec, func(t *testing.T) { testTreeEqualsChains(t, tinySource(t, spec)) })
	}
}

func testTreeEqualsChains(t *testing.T, src model.WeightSource) {
	V := src.Config().Vocab
	r := newRunner(t, src)
	ctx := context.Background()
	pre := prompt[:5]
	// Tree: 0 -> {1, 2}; 1 -> 3; 2 -> 4.
	tree := []int32{10, 11, 12, 13, 14}
	parent := []int32{-1, 0, 0, 1, 2}
	base := len(pre)
	pos := []int32{int32(base), int32(base + 1), int32(base + 1), int32(base + 2), int32(base + 2)}
	if err := r.Forward(ctx, model.Batch{Tokens: pre, Logits: model.LogitsNone}, nil); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, len(tree)*V)
	if err := r.Forward(ctx, model.Batch{Tokens: tree, Pos: pos, Parent: parent, Logits: model.LogitsAll}, got); err != nil {
		t.Fatal(err)
	}
	paths := [][]int{{0, 1, 3}, {0, 2, 4}}
	for _, path := range paths {
		r2 := newRunner(t, src)
		var chain []int32
		for _, n := range path {
			chain = append(chain, tree[n])
		}
		want := make([]float32, len(chain)*V)
		if err := r2.Forward(ctx, model.Batch{Tokens: append(append([]int32{}, pre...), chain...), Logits: model.LogitsAll}, make([]float32, (len(pre)+len(chain))*V)); err != nil {
			t.Fatal(err)
		}
		r2.KV.Rewind(len(pre))
		if err := r2.Forward(ctx, model.Batch{Tokens: chain, Logits: model.LogitsAll}, want); err != nil {
			t.Fatal(err)
		}
		for j, n := range path {
			if firstBitDiff(got[n*V:(n+1)*V], want[j*V:(j+1)*V]) >= 0 {
				t.Errorf("path %v node %d: tree vs chain logits differ (by up to %g)", path, n, maxDiff(got[n*V:(n+1)*V], want[j*V:(j+1)*V]))
			}
		}
	}
	// Keeping path {0,2,4} then decoding must equal the chain run.
	if err := r.KV.KeepPath(base, []int{0, 2, 4}); err != nil {
		t.Fatal(err)
	}
	next := make([]float32, V)
	if err := r.Forward(ctx, model.Batch{Tokens: []int32{99}}, next); err != nil {
		t.Fatal(err)
	}
	r3 := newRunner(t, src)
	want := make([]float32, V)
	if err := r3.Forward(ctx, model.Batch{Tokens: append(append([]int32{}, pre...), 10, 12, 14, 99)}, want); err != nil {
		t.Fatal(err)
	}
	if firstBitDiff(next, want) >= 0 {
		t.Errorf("after KeepPath: logits differ from the chain (by up to %g)", maxDiff(next, want))
	}
}

// sumComm is an in-test allreduce over shared memory (a barrier and a
// float64 sum), independent of engine/tp.
type sumComm struct {
	mu   sync.Mutex
	n    int
	bufs [][]float32
	cond *sync.Cond
	gen  int
	done int
	out  []float32
}

type rankComm struct {
	g    *sumComm
	rank int
}

func (c rankComm) AllReduceSum(_ context.Context, x []float32) error {
	g := c.g
	g.mu.Lock()
	defer g.mu.Unlock()
	gen := g.gen
	g.bufs[c.rank] = x
	g.done++
	if g.done == g.n {
		sum := make([]float64, len(x))
		for _, b := range g.bufs {
			for i, v := range b {
				sum[i] += float64(v)
			}
		}
		g.out = make([]float32, len(x))
		for i, v := range sum {
			g.out[i] = float32(v)
		}
		g.done = 0
		g.gen++
		g.cond.Broadcast()
	} else {
		for g.gen == gen {
			g.cond.Wait()
		}
	}
	copy(x, g.out)
	return nil
}

func TestTensorParallelEqualsSingle(t *testing.T) {
	for _, tc := range []struct {
		spec string
		tp   int
	}{{"tiny", 2}, {"tiny", 4}, {"tiny?dtype=q8_0", 2}, {"small?layers=1", 8}} {
		t.Run(fmt.Sprintf("%s/tp%d", tc.spec, tc.tp), func(t *testing.T) {
			testTensorParallel(t, tinySource(t, tc.spec), tc.tp)
		})
	}
}

// testTensorParallel checks that tp ranks give TP=1's logits on prompt.
func testTensorParallel(t *testing.T, src model.WeightSource, tp int) {
	V := src.Config().Vocab
	ref := make([]float32, len(prompt)*V)
	if err := newRunner(t, src).Forward(context.Background(), model.Batch{Tokens: prompt, Logits: model.LogitsAll}, ref); err != nil {
		t.Fatal(err)
	}
	g := &sumComm{n: tp, bufs: make([][]float32, tp)}
	g.cond = sync.NewCond(&g.mu)
	got := make([]float32, len(prompt)*V)
	var wg sync.WaitGroup
	errs := make([]error, tp)
	for r := 0; r < tp; r++ {
		w, err := model.LoadWeights(src, model.Shard{Rank: r, Size: tp})
		if err != nil {
			t.Fatal(err)
		}
		run := model.NewRunner(w, 64, rankComm{g, r}, cpu.NewPool(1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = run.Forward(context.Background(), model.Batch{Tokens: prompt, Logits: model.LogitsAll}, got)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if d := maxDiff(got, ref); d > 1e-4 {
		t.Errorf("TP=%d logits differ from TP=1 by %g", tp, d)
	}
}

func TestBadTP(t *testing.T) {
	src := tinySource(t, "tiny") // 4 heads, 2 kv heads
	_, err := model.LoadWeights(src, model.Shard{Rank: 0, Size: 3})
	if err == nil || !contains(err.Error(), "valid sizes: [1 2 4]") {
		t.Errorf("LoadWeights(TP=3) error = %v, want one listing valid sizes [1 2 4]", err)
	}
}

func TestContextOverflow(t *testing.T) {
	src := tinySource(t, "tiny")
	w, _ := model.LoadWeights(src, model.Shard{Size: 1})
	r := model.NewRunner(w, 8, nil, nil)
	err := r.Forward(context.Background(), model.Batch{Tokens: prompt}, make([]float32, src.Config().Vocab))
	if err == nil || !contains(err.Error(), "exceed the context") {
		t.Errorf("Forward(12 tokens, ctx 8) error = %v", err)
	}
	if r.KV.Len != 0 {
		t.Errorf("cache length %d after a failed forward, want 0", r.KV.Len)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// A prompt longer than the micro-batch runs in micro-batches: the last
// logits row and the captured hidden states (every prompt token's, in
// order) must be bit for bit those of feeding the same tokens in steps of
// another size, and an error must leave the cache where it was.
func TestMicroBatchedPrefill(t *testing.T) {
	src := tinySource(t, "synthetic:tiny?dtype=f32")
	a, b := newRunner(t, src), newRunner(t, src)
	n := a.MicroBatch()
	long := make([]int32, 3*n+5)
	for i := range long {
		long[i] = int32(1 + (i*37)%200)
	}
	c := src.Config()
	a.CaptureLayers, b.CaptureLayers = []int{0, c.Layers - 1}, []int{0, c.Layers - 1}
	la := make([]float32, c.Vocab)
	if err := a.Forward(context.Background(), model.Batch{Tokens: long, Logits: model.LogitsLast}, la); err != nil {
		t.Fatal(err)
	}
	lb := make([]float32, c.Vocab)
	var capB [][]float32 = make([][]float32, 2)
	for i := 0; i < len(long); i += 7 {
		j := min(len(long), i+7)
		mode := model.LogitsNone
		if j == len(long) {
			mode = model.LogitsLast
		}
		if err := b.Forward(context.Background(), model.Batch{Tokens: long[i:j], Logits: mode}, lb); err != nil {
			t.Fatal(err)
		}
		for k := range capB {
			capB[k] = append(capB[k], b.Captured[k]...)
		}
	}
	if i := firstBitDiff(la, lb); i >= 0 {
		t.Fatalf("micro-batched prefill (%d per pass) logit %d = %v, steps of 7 give %v", n, i, la[i], lb[i])
	}
	for k := range capB {
		if len(a.Captured[k]) != len(long)*c.Dim {
			t.Fatalf("captured layer %d holds %d floats, want %d (every prompt token)", k, len(a.Captured[k]), len(long)*c.Dim)
		}
		if i := firstBitDiff(a.Captured[k], capB[k]); i >= 0 {
			t.Fatalf("captured layer %d element %d differs", k, i)
		}
	}
	// A bad token in the last micro-batch: error, cache back at its length.
	if err := a.KV.Rewind(5); err != nil {
		t.Fatal(err)
	}
	before := a.KV.Len
	bad := append(append([]int32{}, long...), int32(c.Vocab))
	if err := a.Forward(context.Background(), model.Batch{Tokens: bad, Logits: model.LogitsLast}, la); err == nil {
		t.Fatal("token id = vocab: no error")
	}
	if a.KV.Len != before {
		t.Fatalf("cache length %d after a failed forward, want %d", a.KV.Len, before)
	}
}
