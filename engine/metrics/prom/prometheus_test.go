package prom

import (
	"context"
	"math"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"rigscope/engine"
	"rigscope/engine/metrics"
)

// scrape serves one GET /metrics from x and parses the text exposition.
func scrape(t *testing.T, x *Exporter) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	x.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parsing the exposition: %v", err)
	}
	return fams
}

// series returns the value of the one series of family name whose labels
// include want (a counter's value, a histogram's count), and whether there
// is one.
func series(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		for k, v := range want {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			return m.Counter.GetValue(), true
		case dto.MetricType_HISTOGRAM:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// stepRecord keeps what the engine reported, to compute the expected
// counters independently of the exporter.
type stepRecord struct {
	drafts, draftTokens, accepted, generated, prompt, itl int
	posDrafted, posAccepted                               []int
	allreduceCalls                                        int64
	runs                                                  int
}

func (r *stepRecord) add(st engine.Stats, steps []engine.StepStats, snap metrics.Snapshot) {
	r.runs++
	r.prompt += st.PromptTokens
	r.generated += st.GeneratedTokens
	for _, s := range steps {
		if s.Tokens > 0 {
			r.itl++
		}
		if s.Drafted == 0 {
			continue
		}
		r.drafts++
		r.draftTokens += s.Drafted
		r.accepted += s.Accepted
		for i := 0; i < s.Depth; i++ {
			for len(r.posDrafted) <= i {
				r.posDrafted, r.posAccepted = append(r.posDrafted, 0), append(r.posAccepted, 0)
			}
			r.posDrafted[i]++
			if i < s.Accepted {
				r.posAccepted[i]++
			}
		}
	}
	for _, l := range snap.AllReduce {
		r.allreduceCalls += l.Count
	}
}

// TestExporterEngineRuns runs the engine twice (TP 2, a chain then a tree)
// with the exporter as its observer and checks the parsed exposition:
// names, types, labels, values against the engine's own step records, and
// that every series only grew from the first scrape to the second.
func TestExporterEngineRuns(t *testing.T) {
	x := New()
	ctx := context.Background()
	e, err := engine.Open(ctx, "synthetic:tiny", engine.Options{CtxLen: 256, Observer: x})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	model := map[string]string{"model_name": "synthetic:tiny", "engine": "0"}
	runs := []engine.RunConfig{
		{PromptIDs: []int32{1, 5, 9, 13}, MaxTokens: 40, TP: 2, AllReduce: "ring",
			Drafter: engine.DrafterConfig{Kind: "model", Path: "synthetic:tiny?seed=5", K: 4}},
		{PromptIDs: []int32{1, 7, 7, 2, 8}, MaxTokens: 30, TP: 2, AllReduce: "ring",
			Drafter: engine.DrafterConfig{Kind: "model", Path: "synthetic:tiny", K: 3, Tree: 2}},
	}
	var want stepRecord
	var prev map[string]*dto.MetricFamily
	for i, cfg := range runs {
		var steps []engine.StepStats
		st, err := e.Run(ctx, cfg, func(ev engine.Event) {
			if ev.Kind == engine.EventStep {
				steps = append(steps, ev.Step)
			}
		})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		want.add(st, steps, e.Snapshot())
		fams := scrape(t, x)

		types := map[string]dto.MetricType{
			"vllm:spec_decode_num_drafts_total":                  dto.MetricType_COUNTER,
			"vllm:spec_decode_num_draft_tokens_total":            dto.MetricType_COUNTER,
			"vllm:spec_decode_num_accepted_tokens_total":         dto.MetricType_COUNTER,
			"vllm:spec_decode_num_accepted_tokens_per_pos_total": dto.MetricType_COUNTER,
			"rigscope:spec_decode_num_drafts_per_pos_total":      dto.MetricType_COUNTER,
			"vllm:prompt_tokens_total":                           dto.MetricType_COUNTER,
			"vllm:generation_tokens_total":                       dto.MetricType_COUNTER,
			"vllm:request_success_total":                         dto.MetricType_COUNTER,
			"vllm:time_to_first_token_seconds":                   dto.MetricType_HISTOGRAM,
			"vllm:inter_token_latency_seconds":                   dto.MetricType_HISTOGRAM,
			"rigscope:allreduce_latency_seconds":                 dto.MetricType_HISTOGRAM,
			"rigscope:interconnect_bytes_sent_total":             dto.MetricType_COUNTER,
			"rigscope:interconnect_bytes_received_total":         dto.MetricType_COUNTER,
		}
		for name, typ := range types {
			if f := fams[name]; f == nil || f.GetType() != typ {
				t.Fatalf("run %d: %s missing or not a %v: %v", i, name, typ, f)
			}
		}
		check := func(name string, labels map[string]string, want float64) {
			t.Helper()
			all := map[string]string{}
			for k, v := range model {
				all[k] = v
			}
			for k, v := range labels {
				all[k] = v
			}
			if got, ok := series(fams, name, all); !ok || got != want {
				t.Errorf("run %d: %s%v = %v (present %v), want %v", i, name, all, got, ok, want)
			}
		}
		check("vllm:spec_decode_num_drafts_total", nil, float64(want.drafts))
		check("vllm:spec_decode_num_draft_tokens_total", nil, float64(want.draftTokens))
		check("vllm:spec_decode_num_accepted_tokens_total", nil, float64(want.accepted))
		check("vllm:prompt_tokens_total", nil, float64(want.prompt))
		check("vllm:generation_tokens_total", nil, float64(want.generated))
		check("vllm:request_success_total", map[string]string{"finished_reason": "length"}, float64(want.runs))
		check("vllm:request_success_total", map[string]string{"finished_reason": "stop"}, 0)
		check("vllm:time_to_first_token_seconds", nil, float64(want.runs))
		check("vllm:inter_token_latency_seconds", nil, float64(want.itl))
		for p := range 4 { // k = 4 in run 0: positions 0..3 exist from then on
			var d, a int
			if p < len(want.posDrafted) {
				d, a = want.posDrafted[p], want.posAccepted[p]
			}
			check("vllm:spec_decode_num_accepted_tokens_per_pos_total", map[string]string{"position": strconv.Itoa(p)}, float64(a))
			check("rigscope:spec_decode_num_drafts_per_pos_total", map[string]string{"position": strconv.Itoa(p)}, float64(d))
		}
		if got, _ := series(fams, "rigscope:allreduce_latency_seconds", map[string]string{"tp": "2", "backend": "ring"}); want.allreduceCalls == 0 {
			t.Fatalf("run %d: the engine recorded no allreduce at TP 2", i)
		} else if total := sumCounts(fams["rigscope:allreduce_latency_seconds"]); total != float64(want.allreduceCalls) || got == 0 {
			t.Errorf("run %d: allreduce observations %v, want %d (the engine's, over both runs)", i, total, want.allreduceCalls)
		}
		if prev != nil {
			assertGrew(t, prev, fams)
		}
		prev = fams
	}
}

func sumCounts(f *dto.MetricFamily) float64 {
	var n float64
	for _, m := range f.GetMetric() {
		n += float64(m.GetHistogram().GetSampleCount())
	}
	return n
}

// assertGrew checks that no counter value, histogram count, sum or bucket
// of a rigscope or vLLM series went down between two scrapes, and that the
// speculative and token counters went up.
func assertGrew(t *testing.T, before, after map[string]*dto.MetricFamily) {
	t.Helper()
	key := func(m *dto.Metric) string {
		s := ""
		for _, lp := range m.Label {
			s += lp.GetName() + "=" + lp.GetValue() + ","
		}
		return s
	}
	for name, fb := range before {
		fa := after[name]
		if fa == nil {
			t.Errorf("%s disappeared", name)
			continue
		}
		now := map[string]*dto.Metric{}
		for _, m := range fa.Metric {
			now[key(m)] = m
		}
		for _, mb := range fb.Metric {
			ma := now[key(mb)]
			if ma == nil {
				t.Errorf("%s{%s} disappeared", name, key(mb))
				continue
			}
			switch fb.GetType() {
			case dto.MetricType_COUNTER:
				if ma.Counter.GetValue() < mb.Counter.GetValue() {
					t.Errorf("%s{%s} went down: %v -> %v", name, key(mb), mb.Counter.GetValue(), ma.Counter.GetValue())
				}
			case dto.MetricType_HISTOGRAM:
				hb, ha := mb.Histogram, ma.Histogram
				if ha.GetSampleCount() < hb.GetSampleCount() || ha.GetSampleSum() < hb.GetSampleSum() {
					t.Errorf("%s{%s} went down: count %d -> %d", name, key(mb), hb.GetSampleCount(), ha.GetSampleCount())
				}
				for j, b := range hb.Bucket {
					if ha.Bucket[j].GetCumulativeCount() < b.GetCumulativeCount() {
						t.Errorf("%s{%s} bucket le=%v went down", name, key(mb), b.GetUpperBound())
					}
				}
			}
		}
	}
	for _, name := range []string{"vllm:spec_decode_num_drafts_total", "vllm:generation_tokens_total", "rigscope:allreduce_latency_seconds"} {
		b, a := total(before[name]), total(after[name])
		if a <= b {
			t.Errorf("%s did not grow over the second run: %v -> %v", name, b, a)
		}
	}
}

func total(f *dto.MetricFamily) float64 {
	var n float64
	for _, m := range f.GetMetric() {
		n += m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
	}
	return n
}

// TestRunSteps feeds step records by hand: per-position counts follow the
// positions proposed (Depth) and accepted (Accepted), and inter-token
// latencies are the gaps between steps that emitted tokens.
func TestRunSteps(t *testing.T) {
	x := New()
	r := x.RunStarted(engine.RunStart{Model: "m", Drafter: engine.DrafterConfig{Kind: "ngram", K: 4}, TP: 1, PromptTokens: 7})
	r.FirstToken(10 * time.Millisecond)
	for _, s := range []engine.StepStats{
		{Tokens: 1, At: 12 * time.Millisecond},                                    // plain (baseline) step
		{Drafted: 1, Depth: 1, Accepted: 0, Tokens: 1, At: 15 * time.Millisecond}, // n-gram found one token
		{Drafted: 4, Depth: 4, Accepted: 4, Tokens: 5, At: 20 * time.Millisecond}, // chain, all kept
		{Drafted: 6, Depth: 3, Accepted: 2, Tokens: 3, At: 30 * time.Millisecond}, // tree of 6 nodes, depth 3
		{Drafted: 2, Depth: 2, Accepted: 1, Tokens: 0, At: 31 * time.Millisecond}, // cut at max tokens: no token
	} {
		r.Step(s)
	}
	r.RunEnded(engine.Stats{StopReason: "eos"})
	fams := scrape(t, x)
	m := map[string]string{"model_name": "m", "engine": "0"}
	with := func(k, v string) map[string]string {
		out := map[string]string{k: v}
		for a, b := range m {
			out[a] = b
		}
		return out
	}
	cases := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"vllm:spec_decode_num_drafts_total", m, 4},
		{"vllm:spec_decode_num_draft_tokens_total", m, 13},
		{"vllm:spec_decode_num_accepted_tokens_total", m, 7},
		{"vllm:prompt_tokens_total", m, 7},
		{"vllm:generation_tokens_total", m, 11},
		{"vllm:inter_token_latency_seconds", m, 4},
		{"vllm:request_success_total", with("finished_reason", "stop"), 1},
		{"vllm:spec_decode_num_accepted_tokens_per_pos_total", with("position", "0"), 3},
		{"vllm:spec_decode_num_accepted_tokens_per_pos_total", with("position", "1"), 2},
		{"vllm:spec_decode_num_accepted_tokens_per_pos_total", with("position", "2"), 1},
		{"vllm:spec_decode_num_accepted_tokens_per_pos_total", with("position", "3"), 1},
		{"rigscope:spec_decode_num_drafts_per_pos_total", with("position", "0"), 4},
		{"rigscope:spec_decode_num_drafts_per_pos_total", with("position", "1"), 3},
		{"rigscope:spec_decode_num_drafts_per_pos_total", with("position", "2"), 2},
		{"rigscope:spec_decode_num_drafts_per_pos_total", with("position", "3"), 1},
	}
	for _, c := range cases {
		if got, ok := series(fams, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	itl := fams["vllm:inter_token_latency_seconds"].Metric[0].Histogram
	if got := itl.GetSampleSum(); got < 0.0199 || got > 0.0201 { // 30 ms - 10 ms in four gaps
		t.Errorf("inter-token latency sum %v s, want 0.020", got)
	}
	if b := itl.Bucket[0]; b.GetUpperBound() != 0.01 || b.GetCumulativeCount() != 4 {
		t.Errorf("first ITL bucket le=%v count %d, want vLLM's 0.01 holding all 4", b.GetUpperBound(), b.GetCumulativeCount())
	}
	for _, c := range []struct {
		name string
		want []float64
	}{{"vllm:time_to_first_token_seconds", ttftBuckets}, {"vllm:inter_token_latency_seconds", itlBuckets}} {
		var got []float64
		for _, b := range fams[c.name].Metric[0].Histogram.Bucket {
			got = append(got, b.GetUpperBound())
		}
		if len(got) != len(c.want)+1 || !math.IsInf(got[len(got)-1], 1) || !slices.Equal(got[:len(c.want)], c.want) {
			t.Errorf("%s buckets %v, want vLLM's %v and +Inf", c.name, got, c.want)
		}
	}
}

// TestCommLifetime: a scrape during a run sees its allreduce calls so far,
// the run's end does not count them twice, and a later run adds to them.
func TestCommLifetime(t *testing.T) {
	x := New()
	count := func() (uint64, uint64) {
		f := scrape(t, x)["rigscope:allreduce_latency_seconds"]
		if f == nil {
			return 0, 0
		}
		var n, first uint64
		for _, m := range f.Metric {
			n += m.Histogram.GetSampleCount()
			for _, b := range m.Histogram.Bucket {
				if b.GetUpperBound() > 900e-9 { // the first bound above the samples' 900 ns: 1.13 µs
					first += b.GetCumulativeCount()
					break
				}
				if b.GetCumulativeCount() != 0 {
					t.Errorf("%d observations below le=%v, want none below 900ns", b.GetCumulativeCount(), b.GetUpperBound())
				}
			}
		}
		return n, first
	}
	steps := []struct {
		record int
		end    bool
		want   uint64
	}{{3, false, 3}, {2, false, 5}, {0, true, 5}, {4, true, 9}}
	var lat *metrics.LatencySet
	var r engine.RunObserver
	for i, s := range steps {
		if r == nil {
			lat = metrics.NewLatencySet()
			r = x.RunStarted(engine.RunStart{Model: "m", TP: 2, AllReduce: lat, Bytes: metrics.NewRankBytes(2)})
		}
		for range s.record {
			lat.Record("ring", 4096, 900*time.Nanosecond)
		}
		if s.end {
			r.RunEnded(engine.Stats{})
			r = nil
		}
		if n, below := count(); n != s.want || below != s.want {
			t.Errorf("step %d: %d observations (%d in le=1.13µs), want %d", i, n, below, s.want)
		}
	}
}

// TestLint runs promlint over a populated registry: the only problem it may
// report is the ':' in the names, which vLLM's names have (and rigscope's
// follow, as one namespace:name style).
func TestLint(t *testing.T) {
	x := New()
	lat := metrics.NewLatencySet()
	lat.Record("ring", 4096, time.Microsecond)
	r := x.RunStarted(engine.RunStart{Model: "m", Drafter: engine.DrafterConfig{Kind: "ngram", K: 2}, TP: 2, AllReduce: lat, Bytes: metrics.NewRankBytes(2)})
	r.FirstToken(time.Millisecond)
	r.Step(engine.StepStats{Drafted: 2, Depth: 2, Accepted: 1, Tokens: 2, At: 2 * time.Millisecond})
	r.RunEnded(engine.Stats{StopReason: "eos"})
	mfs, err := x.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	probs, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		if p.Text != "metric names should not contain ':'" {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
}

// TestExporterStopString: a run ended by a stop string is a processed
// request that finished with "stop", not an aborted one.
func TestExporterStopString(t *testing.T) {
	x := New()
	ctx := context.Background()
	e, err := engine.Open(ctx, "synthetic:tiny", engine.Options{CtxLen: 256, Observer: x})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cfg := engine.RunConfig{PromptIDs: []int32{1, 5, 9, 13}, MaxTokens: 40, IgnoreEOS: true, TP: 1}
	var sb strings.Builder
	if _, err := e.Run(ctx, cfg, func(ev engine.Event) {
		for _, tk := range ev.Tokens {
			sb.WriteString(tk.Text)
		}
	}); err != nil {
		t.Fatal(err)
	}
	full := sb.String()
	if len(full) < 10 {
		t.Fatalf("the unstopped run gave %q; the test needs 10 bytes of text", full)
	}
	cfg.Stop = []string{full[len(full)/2 : len(full)/2+2]}
	st, err := e.Run(ctx, cfg, nil)
	if err != nil || st.StopReason != "stop" {
		t.Fatalf("the stopped run ended %q, %v; want stop", st.StopReason, err)
	}
	fams := scrape(t, x)
	for reason, want := range map[string]float64{"stop": 1, "length": 1, "abort": 0} {
		labels := map[string]string{"model_name": "synthetic:tiny", "engine": "0", "finished_reason": reason}
		if got, ok := series(fams, "vllm:request_success_total", labels); !ok || got != want {
			t.Errorf("request_success_total{finished_reason=%q} = %v (present %v), want %v", reason, got, ok, want)
		}
	}
}

// TestStepAllReduceShare: each step adds its wall time and its allreduce
// time to the run's (tp, backend) series, so their rates' ratio is the
// allreduce share of the step; another backend has its own series.
func TestStepAllReduceShare(t *testing.T) {
	x := New()
	steps := []struct {
		backend         string
		wall, allreduce time.Duration // per step
		n               int
	}{{"ring", 4 * time.Millisecond, time.Millisecond, 3}, {"ring", 2 * time.Millisecond, 500 * time.Microsecond, 2}, {"", time.Millisecond, 0, 1}}
	want := map[string][2]float64{}
	for _, s := range steps {
		r := x.RunStarted(engine.RunStart{Model: "m", TP: 2, Backend: s.backend, AllReduce: metrics.NewLatencySet(), Bytes: metrics.NewRankBytes(2)})
		for i := range s.n {
			r.Step(engine.StepStats{Verify: s.wall - 100*time.Microsecond, Other: 100 * time.Microsecond, AllReduce: s.allreduce, Tokens: 1, At: time.Duration(i+1) * s.wall})
		}
		r.RunEnded(engine.Stats{StopReason: "eos"})
		b := s.backend
		if b == "" {
			b = "default"
		}
		w := want[b]
		w[0] += float64(s.n) * s.wall.Seconds()
		w[1] += float64(s.n) * s.allreduce.Seconds()
		want[b] = w
	}
	fams := scrape(t, x)
	for b, w := range want {
		labels := map[string]string{"model_name": "m", "engine": "0", "tp": "2", "backend": b}
		wall, ok1 := series(fams, "rigscope:step_seconds_total", labels)
		ar, ok2 := series(fams, "rigscope:step_allreduce_seconds_total", labels)
		if !ok1 || !ok2 || math.Abs(wall-w[0]) > 1e-9 || math.Abs(ar-w[1]) > 1e-9 {
			t.Errorf("backend %s: step seconds %v (present %v), allreduce seconds %v (present %v); want %v and %v", b, wall, ok1, ar, ok2, w[0], w[1])
		}
	}
}
