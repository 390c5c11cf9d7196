package planner

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"rigscope/engine/model"
	"rigscope/engine/stepstats"
	"rigscope/engine/tp"
)

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// seedsShape is the seeds' rig's model: 61 layers, hidden 7168, bf16 on
// the wire.
func seedsShape() Shape {
	return ShapeOf("seeds", "bf16", model.Config{Arch: "llama", Layers: 61, Dim: 7168, Heads: 56, KVHeads: 8, HeadDim: 128, FFN: 18432, Vocab: 129280}, 2)
}

// TestSeedsArithmetic feeds the planner the seeds' numbers: a verify
// step of 30 ms (about 25 ms of it 122 NCCL allreduces) and plain decoding
// at 82 tok/s. The break-even acceptance length must be 2.46, and a
// drafter reaching 2.0 must not pay.
func TestSeedsArithmetic(t *testing.T) {
	s := seedsShape()
	const dev, ranks = "cuda", 8
	plainUs, verifyUs := 1e6/82, 30000.0
	arUs := 25000.0 / float64(s.AllReduces()) // per call
	in := Inputs{
		Shape: s,
		AllReduce: &AllReduceTable{Points: []AllReducePoint{
			{Device: dev, Ranks: ranks, Backend: "nccl", Bytes: s.MessageBytes(1), Us: Exact(arUs)},
			{Device: dev, Ranks: ranks, Backend: "nccl", Bytes: s.MessageBytes(4), Us: Exact(arUs)},
		}},
		Compute: &ComputeTable{Points: []ComputePoint{
			{Model: s.Key, Device: dev, TP: ranks, Backend: "nccl", Tokens: 1, WallUs: Exact(plainUs)},
			{Model: s.Key, Device: dev, TP: ranks, Backend: "nccl", Tokens: 4, WallUs: Exact(verifyUs)},
		}},
		Draft: &DraftTable{Points: []DraftPoint{{Drafter: "model:d", Device: dev, K: 3, Us: Exact(0)}}},
	}
	// The best drafter's runs: 2.0 tokens per step, always proposing 3.
	var b Book
	var steps []stepstats.Step
	for range 100 {
		acc := 1 // one accepted per step: 2 tokens
		steps = append(steps, stepstats.Step{Drafted: 3, Depth: 3, Accepted: acc, Tokens: acc + 1, Verify: 30 * time.Millisecond})
	}
	b.AddRun("model:d", 3, 0, steps)
	in.Accept = &b
	p := Predict(in, Config{Device: dev, TP: ranks, Backend: "nccl", Drafter: "model", DrafterPath: "d", K: 3})
	if !p.OK() {
		t.Fatalf("Predict: missing %v, unfit %q", p.Missing, p.Unfit)
	}
	if !near(p.BreakEven.V, 2.46, 1e-9) {
		t.Errorf("break-even = %v, want 2.46 (30 ms x 82 tok/s)", p.BreakEven.V)
	}
	if !near(p.VerifyStepMs.V, 30, 1e-9) || !near(p.VerifyAllReduceMs.V, 25, 1e-9) || !near(p.BaselineTokS.V, 82, 1e-9) {
		t.Errorf("verify %v ms (allreduce %v), baseline %v tok/s; want 30, 25, 82", p.VerifyStepMs.V, p.VerifyAllReduceMs.V, p.BaselineTokS.V)
	}
	if p.TokensPerStep.V != 2 || p.Verdict != stepstats.DoesNotPay {
		t.Errorf("tokens/step %v, verdict %s; want 2 and does_not_pay", p.TokensPerStep.V, p.Verdict)
	}
	if want := 2 / 0.030; !near(p.TokS.V, want, 1e-9) {
		t.Errorf("tok/s = %v, want %v", p.TokS.V, want)
	}
}

// TestPublishedRigAllReduceShare: given the seeds' rig's NCCL table (8
// PCIe GPUs, about 100-200 us a call at these sizes) and its model, the
// verify step's allreduce share at k+1 = 4 tokens lands in the 20-27 ms
// that rig measured.
func TestPublishedRigAllReduceShare(t *testing.T) {
	s := seedsShape()
	in := Inputs{
		Shape: s,
		AllReduce: &AllReduceTable{Points: []AllReducePoint{ // nccl-tests on 8 PCIe GPUs, bf16
			{Device: "cuda", Ranks: 8, Backend: "nccl", Bytes: 8 << 10, Us: Range{105, 95, 120}},
			{Device: "cuda", Ranks: 8, Backend: "nccl", Bytes: 32 << 10, Us: Range{150, 130, 175}},
			{Device: "cuda", Ranks: 8, Backend: "nccl", Bytes: 128 << 10, Us: Range{230, 200, 260}},
		}},
		Compute: &ComputeTable{Points: []ComputePoint{
			{Model: s.Key, Device: "cuda", TP: 8, Backend: "nccl", Tokens: 4, WallUs: Exact(30000)},
			{Model: s.Key, Device: "cuda", TP: 8, Backend: "nccl", Tokens: 1, WallUs: Exact(12000)},
		}},
	}
	bytes := s.MessageBytes(4)
	if bytes != 4*7168*2 {
		t.Fatalf("MessageBytes(4) = %d, want 4 x 7168 x 2", bytes)
	}
	_, ar, _, miss := forward(in, Config{Device: "cuda", TP: 8, Backend: "nccl"}, 4)
	if miss != nil {
		t.Fatal(miss)
	}
	ms := ar.V / 1e3
	t.Logf("122 calls of %d bytes: %.1f ms (%.1f-%.1f)", bytes, ms, ar.Lo/1e3, ar.Hi/1e3)
	if ms < 20 || ms > 27 {
		t.Errorf("verify allreduce = %.1f ms, want within the measured 20-27 ms", ms)
	}
	// The same through a whole prediction of the seeds' configuration: a
	// drafter at k=3 verifies k+1 = 4 tokens.
	in.Draft = &DraftTable{Points: []DraftPoint{{Drafter: "model:d", Device: "cuda", K: 3, Us: Exact(500)}}}
	in.Accept = &Book{}
	p := Predict(in, Config{Device: "cuda", TP: 8, Backend: "nccl", Drafter: "model", DrafterPath: "d", K: 3})
	if !p.OK() || p.Config.VerifyTokens() != 4 {
		t.Fatalf("Predict: missing %v, unfit %q", p.Missing, p.Unfit)
	}
	if v := p.VerifyAllReduceMs.V; v < 20 || v > 27 || !near(v, ms, 1e-9) {
		t.Errorf("predicted verify allreduce = %.1f ms, want %.1f, within the measured 20-27 ms", v, ms)
	}
}

// cpuInputs is a small CPU rig: a 4-layer model, oneshot the reference.
func cpuInputs() Inputs {
	s := ShapeOf("m", "f32", model.Config{Arch: "llama", Layers: 4, Dim: 512, Heads: 8, KVHeads: 4, HeadDim: 64, FFN: 1024, Vocab: 4096}, 4)
	ar := &AllReduceTable{}
	cp := &ComputeTable{}
	for _, n := range []int{1, 2, 3, 5} {
		b := s.MessageBytes(n)
		ar.Points = append(ar.Points,
			AllReducePoint{Device: "cpu", Ranks: 2, Backend: "oneshot", Bytes: b, Us: Range{10, 8, 12}},
			AllReducePoint{Device: "cpu", Ranks: 2, Backend: "ring", Bytes: b, Us: Range{60, 50, 70}},
			AllReducePoint{Device: "cpu", Ranks: 2, Backend: "twoshot", Bytes: b, Us: Range{15, 12, 18}},
			AllReducePoint{Device: "cpu", Ranks: 2, Backend: "tree", Bytes: b, Us: Range{20, 18, 30}})
		w := 1000 + 200*float64(n)
		cp.Points = append(cp.Points,
			ComputePoint{Model: s.Key, Device: "cpu", TP: 1, Tokens: n, WallUs: Range{w, w * 0.9, w * 1.1}},
			ComputePoint{Model: s.Key, Device: "cpu", TP: 2, Backend: "oneshot", Tokens: n, WallUs: Range{w / 2, w / 2 * 0.9, w / 2 * 1.2}})
	}
	return Inputs{Shape: s, AllReduce: ar, Compute: cp,
		Draft: &DraftTable{Points: []DraftPoint{{Drafter: "ngram", Device: "cpu", K: 4, Us: Range{20, 15, 30}}}}, Accept: &Book{}}
}

// TestBackendSwap: a backend whose forward was not timed gets the timed
// one's with the reference's allreduce calls swapped for its own; one
// that was timed gets its own timing, whatever the table says.
func TestBackendSwap(t *testing.T) {
	in := cpuInputs()
	n := float64(in.Shape.AllReduces())
	for _, tc := range []struct {
		backend string
		want    float64
		basis   string
	}{
		{"oneshot", 600, "forward timed with oneshot"},
		{"ring", 600 + n*(60-10), "forward timed with oneshot, its allreduce calls swapped for ring's per the table"},
		{"twoshot", 600 + n*(15-10), "swapped for twoshot's"},
	} {
		got, _, basis, miss := forward(in, Config{Device: "cpu", TP: 2, Backend: tc.backend}, 1)
		if miss != nil || !near(got.V, tc.want, 1e-9) || !got.valid() || !strings.Contains(basis, tc.basis) {
			t.Errorf("forward(TP 2 %s, 1 token) = %+v (%q, missing %v), want %v (%q)", tc.backend, got, basis, miss, tc.want, tc.basis)
		}
	}
	// Between timed batch sizes (3 and 5), linear.
	got, _, _, _ := forward(in, Config{Device: "cpu", TP: 1}, 4)
	if !near(got.V, 1800, 1e-9) {
		t.Errorf("forward(TP 1, 4 tokens) = %v, want 1800 (between 1600 and 2000)", got.V)
	}
	// auto resolves through its table.
	in.Auto = map[int]*tp.AutoTable{2: {Ranks: 2, Rules: []tp.AutoRule{{MaxBytes: 1 << 30, Backend: "ring"}}}}
	a, _, _, _ := forward(in, Config{Device: "cpu", TP: 2, Backend: "auto"}, 1)
	r, _, _, _ := forward(in, Config{Device: "cpu", TP: 2, Backend: "ring"}, 1)
	if a != r {
		t.Errorf("auto (ring per its table) = %+v, ring = %+v", a, r)
	}
	// Ring's own forward timed: in a forward its calls wait for ranks
	// busy with compute, which the table's back-to-back calls do not
	// show; the timing wins, with rank 0's time in the calls as its share.
	for _, m := range []int{1, 2, 3, 5} {
		w := 900 + 100*float64(m)
		in.Compute.Points = append(in.Compute.Points, ComputePoint{Model: in.Shape.Key, Device: "cpu", TP: 2, Backend: "ring", Tokens: m,
			WallUs: Range{w, w * 0.9, w * 1.1}, AllReduceUs: Exact(300), Calls: in.Shape.AllReduces()})
	}
	got, ar, basis, miss := forward(in, Config{Device: "cpu", TP: 2, Backend: "ring"}, 4)
	if miss != nil || !near(got.V, 1300, 1e-9) || ar.V != 300 || !strings.Contains(basis, "forward timed with ring, allreduce as rank 0 spent") {
		t.Errorf("timed ring forward(4 tokens) = %+v, allreduce %+v (%q, missing %v), want 1300 (between 1200 and 1400) and 300", got, ar, basis, miss)
	}
}

func TestMissingAndUnfit(t *testing.T) {
	in := cpuInputs()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Device: "cpu", TP: 4, Backend: "ring"}, "no timed forward of a 1-token batch at TP 4 with ring on cpu"},
		{Config{Device: "cpu", TP: 2, Backend: "compressed"}, "no timed forward of a 1-token batch at TP 2 with compressed on cpu"},
		{Config{Device: "cpu", TP: 2, Backend: "auto"}, "no auto table for 2 ranks"},
		{Config{Device: "cpu", TP: 1, Drafter: "model", DrafterPath: "d.gguf", K: 4}, "no draft time of model:d.gguf at k=4 (chain) on cpu"},
		{Config{Device: "cpu", TP: 1, Drafter: "ngram", K: 8}, "no timed forward of a 9-token batch at TP 1 on cpu"},
	} {
		p := Predict(in, tc.cfg)
		var words []string
		for _, m := range p.Missing {
			words = append(words, m.String())
		}
		if p.OK() || !strings.Contains(strings.Join(words, "; "), tc.want) {
			t.Errorf("Predict(%s): missing %q, want it to name %q", tc.cfg, words, tc.want)
		}
		if p.Verdict != "" || p.TokS.V != 0 {
			t.Errorf("Predict(%s) with a missing measurement still gave %s at %v tok/s", tc.cfg, p.Verdict, p.TokS.V)
		}
	}
	in.Fits = func(n int) error {
		if n > 2 {
			return errors.New("needs 9.0 GiB, 4.0 GiB available")
		}
		return nil
	}
	if p := Predict(in, Config{Device: "cpu", TP: 4, Backend: "ring"}); !strings.Contains(p.Unfit, "9.0 GiB") || p.OK() {
		t.Errorf("unfit: %+v", p)
	}
}

// TestPredictNgram: a drafter that proposes in some steps only: the step
// mixes verify and plain forwards by its proposal rate.
func TestPredictNgram(t *testing.T) {
	in := cpuInputs()
	var steps []stepstats.Step
	for i := range 40 {
		if i%2 == 0 { // proposes 2 of k=4, accepts 1
			steps = append(steps, stepstats.Step{Drafted: 2, Depth: 2, Accepted: 1, Tokens: 2})
		} else {
			steps = append(steps, stepstats.Step{Tokens: 1})
		}
	}
	in.Accept.AddRun("ngram", 4, 0, steps)
	p := Predict(in, Config{Device: "cpu", TP: 1, Drafter: "ngram", K: 4})
	if !p.OK() {
		t.Fatal(p.Missing)
	}
	// step = draft 20 + 0.5 x forward(3 tokens) 1600 + 0.5 x forward(1) 1200
	if want := 20 + 0.5*1600 + 0.5*1200; !near(p.StepMs.V*1e3, want, 1e-6) {
		t.Errorf("step = %v us, want %v", p.StepMs.V*1e3, want)
	}
	if !near(p.TokensPerStep.V, 1.5, 1e-12) || !near(p.TokS.V, 1.5e6/1420, 1e-6) {
		t.Errorf("tokens/step %v, tok/s %v", p.TokensPerStep.V, p.TokS.V)
	}
	if !near(p.BreakEven.V, stepstats.BreakEven(1420, 1200), 1e-12) {
		t.Errorf("break-even %v", p.BreakEven.V)
	}
	for name, r := range map[string]Range{"tok/s": p.TokS, "step": p.StepMs, "break-even": p.BreakEven, "speedup": p.Speedup} {
		if !r.valid() || r.Hi <= r.Lo {
			t.Errorf("%s range %+v does not hold its estimate with a spread", name, r)
		}
	}
	// k=2 is read from the k=4 run's first two positions.
	a := in.Accept.For("ngram", "ngram", 2, 0)
	if !strings.Contains(a.Source, "cut at position 2") || !near(a.TokensPerStep.V, 1.5, 1e-12) {
		t.Errorf("For(k=2) = %+v", a)
	}
	// k=1: the first position only: 1 + 20 accepted / 40 steps.
	if a := in.Accept.For("ngram", "ngram", 1, 0); !near(a.TokensPerStep.V, 1.5, 1e-12) || !near(a.MeanDrafted, 1, 1e-12) {
		t.Errorf("For(k=1) = %+v", a)
	}
	// No run of a longer chain: the stated default.
	if a := in.Accept.For("ngram", "ngram", 6, 0); !a.Default || !strings.Contains(a.Source, "default") {
		t.Errorf("For(k=6) = %+v, want the default", a)
	}
}

func TestPlainPrediction(t *testing.T) {
	in := cpuInputs()
	p := Predict(in, Config{Device: "cpu", TP: 2, Backend: "ring", Drafter: "none"})
	n := float64(in.Shape.AllReduces())
	want := 1e6 / (600 + n*50)
	if !p.OK() || !near(p.TokS.V, want, 1e-9) || p.Verdict != stepstats.NoSpec || p.TokS.Lo >= p.TokS.V || p.TokS.Hi <= p.TokS.V {
		t.Errorf("plain TP 2 ring: %+v, want %v tok/s with a range", p.TokS, want)
	}
}

func TestTokenSizes(t *testing.T) {
	for _, tc := range []struct {
		max  int
		want string
	}{
		{1, "[1]"}, {5, "[1 2 3 4 5]"}, {9, "[1 2 3 4 5 6 7 8 9]"}, {40, "[1 2 3 4 5 6 7 8 9 17 33 40]"},
	} {
		if got := fmt.Sprint(TokenSizes(tc.max)); got != tc.want {
			t.Errorf("TokenSizes(%d) = %s, want %s", tc.max, got, tc.want)
		}
	}
}

func TestSpreadOf(t *testing.T) {
	r := SpreadOf([]float64{5, 1, 3, 2, 4})
	if r.V != 3 || !near(r.Lo, 1.4, 1e-12) || !near(r.Hi, 4.6, 1e-12) {
		t.Errorf("SpreadOf = %+v, want median 3, p10 1.4, p90 4.6", r)
	}
	if (SpreadOf(nil) != Range{}) {
		t.Error("SpreadOf(nil) not zero")
	}
}

// TestProposalSizes: a forward's time is not linear in its rows (kernels
// change at some batch sizes), so the step averages the verify over the
// proposal sizes the runs had, not the verify at the mean size.
func TestProposalSizes(t *testing.T) {
	in := cpuInputs()
	for i, pt := range in.Compute.Points {
		if pt.TP == 1 && pt.Tokens == 5 {
			in.Compute.Points[i].WallUs = Exact(5000) // a slower kernel at 5 rows
		}
	}
	var steps []stepstats.Step
	for i := range 40 {
		d := 2 + 2*(i%2) // 2 and 4 drafted: mean 3
		steps = append(steps, stepstats.Step{Drafted: d, Depth: d, Accepted: 1, Tokens: 2})
	}
	in.Accept.AddRun("ngram", 4, 0, steps)
	p := Predict(in, Config{Device: "cpu", TP: 1, Drafter: "ngram", K: 4})
	if !p.OK() {
		t.Fatal(p.Missing)
	}
	// draft 20 + (fwd(3) 1600 + fwd(5) 5000)/2, not fwd(4) = 1800.
	if want := 20 + (1600+5000)/2.0; !near(p.StepMs.V*1e3, want, 1e-6) {
		t.Errorf("step = %v us, want %v", p.StepMs.V*1e3, want)
	}
	if a := p.Acceptance; len(a.Sizes) != 5 || a.Sizes[2] != 0.5 || a.Sizes[4] != 0.5 || a.MeanDrafted != 3 {
		t.Errorf("acceptance sizes %v mean %v", a.Sizes, a.MeanDrafted)
	}
}

// TestDrafterKey: a run logged with a relative draft path matches the
// same file given absolutely.
func TestDrafterKey(t *testing.T) {
	a := Config{Drafter: "model", DrafterPath: "../shared/models/d.gguf"}.DrafterKey()
	b := Config{Drafter: "model", DrafterPath: "/work/shared/models/d.gguf"}.DrafterKey()
	if a != b || a != "model:d.gguf" || (Config{Drafter: "ngram"}).DrafterKey() != "ngram" {
		t.Errorf("keys %q, %q", a, b)
	}
}
