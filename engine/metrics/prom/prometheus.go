// Package prom exports what the engine measures to Prometheus, through
// client_golang, under vLLM's metric names, labels and buckets where vLLM has
// the metric (so a vLLM dashboard reads rigscope's unchanged) and under
// rigscope: names where it has none. Every counter and histogram is
// cumulative over the process's lifetime: runs add to it, nothing resets it.
//
// An Exporter is an engine.Observer: set it as engine.Options.Observer and
// serve Handler (engine/metrics/promserve does, on loopback).
//
// Read as a vLLM dashboard reads them (PromQL):
//
//	acceptance rate     rate(vllm:spec_decode_num_accepted_tokens_total[5m]) / rate(vllm:spec_decode_num_draft_tokens_total[5m])
//	acceptance length   1 + rate(vllm:spec_decode_num_accepted_tokens_total[5m]) / rate(vllm:spec_decode_num_drafts_total[5m])
//	per position, vLLM  rate(vllm:spec_decode_num_accepted_tokens_per_pos_total[5m]) / ignoring(position) group_left rate(vllm:spec_decode_num_drafts_total[5m])
//	per position, over the drafts that proposed it (equal for full-length chains)
//	                    rate(vllm:spec_decode_num_accepted_tokens_per_pos_total[5m]) / rate(rigscope:spec_decode_num_drafts_per_pos_total[5m])
//	tokens/s            rate(vllm:generation_tokens_total[1m])
//	TTFT p50            histogram_quantile(0.5, sum by (le, model_name) (rate(vllm:time_to_first_token_seconds_bucket[5m])))
//	ITL p99             histogram_quantile(0.99, sum by (le, model_name) (rate(vllm:inter_token_latency_seconds_bucket[5m])))
//	allreduce p99       histogram_quantile(0.99, sum by (le, tp, backend, bytes) (rate(rigscope:allreduce_latency_seconds_bucket[5m])))
//	allreduce share     rate(rigscope:step_allreduce_seconds_total[5m]) / rate(rigscope:step_seconds_total[5m])
package prom

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"rigscope/engine"
)

// vLLM labels every series with the served model name and the engine
// index; rigscope has one engine per model, index 0.
var vllmLabels = []string{"model_name", "engine"}

const engineIndex = "0"

// vLLM's buckets (vllm/v1/metrics/loggers.py).
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
		0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
		0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
)

// finishedReasons maps a run's stop reason to vLLM's finished_reason;
// a failed run is not a processed request and is not counted.
var finishedReasons = map[string]string{
	"eos": "stop", "stop": "stop", "max_tokens": "length", "context": "length", "cancelled": "abort",
}

// Exporter holds the process-lifetime metrics and the registry they are
// served from. It is safe for concurrent runs (of different engines).
type Exporter struct {
	reg *prometheus.Registry

	drafts, draftTokens, accepted *prometheus.CounterVec // model_name, engine
	acceptedPerPos, draftedPerPos *prometheus.CounterVec // model_name, engine, position
	prompt, generation            *prometheus.CounterVec
	success                       *prometheus.CounterVec // model_name, engine, finished_reason
	ttft, itl                     *prometheus.HistogramVec
	stepTime, stepAllReduce       *prometheus.CounterVec // model_name, engine, tp, backend
	comm                          *commCollector
}

// New makes an exporter with its own registry (which also holds the Go
// runtime and process collectors, as vLLM's holds Python's).
func New() *Exporter {
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(append([]string{}, vllmLabels...), extra...))
	}
	histogram := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, vllmLabels)
	}
	x := &Exporter{
		reg:            prometheus.NewRegistry(),
		drafts:         counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts."),
		draftTokens:    counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens."),
		accepted:       counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens."),
		acceptedPerPos: counter("vllm:spec_decode_num_accepted_tokens_per_pos_total", "Accepted tokens per draft position.", "position"),
		draftedPerPos: counter("rigscope:spec_decode_num_drafts_per_pos_total",
			"Drafts that proposed a token at this position (the per-position acceptance denominator when drafts are shorter than k: n-gram misses, trees).", "position"),
		prompt:     counter("vllm:prompt_tokens_total", "Number of prefill tokens processed."),
		generation: counter("vllm:generation_tokens_total", "Number of generation tokens processed."),
		success:    counter("vllm:request_success_total", "Count of successfully processed requests.", "finished_reason"),
		ttft:       histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets),
		itl:        histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets),
		stepTime: counter("rigscope:step_seconds_total",
			"Wall time of the decode and speculative steps (draft, verify and the loop's own time), per TP size and allreduce backend as the run asked for it.", "tp", "backend"),
		stepAllReduce: counter("rigscope:step_allreduce_seconds_total",
			"Time of those steps in allreduce as rank 0 measured it (CPU ranks: wall time in the calls; GPU ranks: the kernels' device time): over rigscope:step_seconds_total, the allreduce share of the step.", "tp", "backend"),
		comm: newCommCollector(),
	}
	x.reg.MustRegister(x.drafts, x.draftTokens, x.accepted, x.acceptedPerPos, x.draftedPerPos,
		x.prompt, x.generation, x.success, x.ttft, x.itl, x.stepTime, x.stepAllReduce, x.comm,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return x
}

// Gatherer is the registry, for tests and for serving elsewhere.
func (x *Exporter) Gatherer() prometheus.Gatherer { return x.reg }

// Handler serves the metrics in the Prometheus text (or negotiated)
// format; at most 4 scrapes are gathered at once, more get 503.
func (x *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(x.reg, promhttp.HandlerOpts{MaxRequestsInFlight: 4, Timeout: 10 * time.Second})
}

// RunStarted implements engine.Observer: the run's series are made now
// (at zero, for every position up to k, as vLLM makes them), so a rate
// over them is 0 rather than absent.
func (x *Exporter) RunStarted(rs engine.RunStart) engine.RunObserver {
	l := []string{rs.Model, engineIndex}
	r := &run{
		drafts: x.drafts.WithLabelValues(l...), draftTokens: x.draftTokens.WithLabelValues(l...),
		accepted: x.accepted.WithLabelValues(l...), prompt: x.prompt.WithLabelValues(l...),
		generation: x.generation.WithLabelValues(l...),
		ttft:       x.ttft.WithLabelValues(l...), itl: x.itl.WithLabelValues(l...),
		promptTokens: rs.PromptTokens,
		pos: func(i int) (accepted, drafted prometheus.Counter) {
			p := strconv.Itoa(i)
			return x.acceptedPerPos.WithLabelValues(rs.Model, engineIndex, p), x.draftedPerPos.WithLabelValues(rs.Model, engineIndex, p)
		},
		success: func(reason string) prometheus.Counter {
			return x.success.WithLabelValues(rs.Model, engineIndex, reason)
		},
		comm: x.comm.start(rs.TP, rs.AllReduce, rs.Bytes),
	}
	tpl, backend := strconv.Itoa(rs.TP), rs.Backend
	if backend == "" {
		backend = "default"
	}
	r.stepTime = x.stepTime.WithLabelValues(rs.Model, engineIndex, tpl, backend)
	r.stepAllReduce = x.stepAllReduce.WithLabelValues(rs.Model, engineIndex, tpl, backend)
	for _, reason := range []string{"stop", "length", "abort"} {
		r.success(reason)
	}
	r.growPositions(rs.Drafter.K)
	return r
}

// run feeds one run's events into the exporter's series, resolved once.
type run struct {
	drafts, draftTokens, accepted, prompt, generation prometheus.Counter
	ttft, itl                                         prometheus.Observer
	stepTime, stepAllReduce                           prometheus.Counter
	promptTokens                                      int
	lastEmit                                          time.Duration // since the run's start, when tokens last came

	pos                           func(int) (accepted, drafted prometheus.Counter)
	acceptedPerPos, draftedPerPos []prometheus.Counter
	success                       func(reason string) prometheus.Counter
	comm                          *commRun
}

func (r *run) growPositions(n int) {
	for i := len(r.acceptedPerPos); i < n; i++ {
		a, d := r.pos(i)
		r.acceptedPerPos, r.draftedPerPos = append(r.acceptedPerPos, a), append(r.draftedPerPos, d)
	}
}

// FirstToken counts the prompt as processed and the first token as
// generated, as vLLM does at the prefill step.
func (r *run) FirstToken(ttft time.Duration) {
	r.ttft.Observe(ttft.Seconds())
	r.prompt.Add(float64(r.promptTokens))
	r.generation.Inc()
	r.lastEmit = ttft
}

// Step counts the step's tokens and, as vLLM does per engine step, one
// inter-token latency: the time since the previous step's tokens (or the
// first token). A step that drafted counts as one draft of Drafted tokens;
// position i was proposed when Depth > i and accepted when Accepted > i
// (the accepted path's length, for a chain or a tree).
func (r *run) Step(s engine.StepStats) {
	r.stepTime.Add(max(s.Wall(), 0).Seconds())
	r.stepAllReduce.Add(max(s.AllReduce, 0).Seconds())
	if s.Tokens > 0 {
		r.generation.Add(float64(s.Tokens))
		r.itl.Observe((s.At - r.lastEmit).Seconds())
		r.lastEmit = s.At
	}
	if s.Drafted == 0 {
		return
	}
	r.drafts.Inc()
	r.draftTokens.Add(float64(s.Drafted))
	r.accepted.Add(float64(s.Accepted))
	r.growPositions(s.Depth)
	for i := 0; i < s.Depth; i++ {
		r.draftedPerPos[i].Inc()
		if i < s.Accepted {
			r.acceptedPerPos[i].Inc()
		}
	}
}

// RunEnded counts the request by its finish reason and folds the run's
// allreduce measurements into the lifetime totals.
func (r *run) RunEnded(st engine.Stats) {
	if reason, ok := finishedReasons[st.StopReason]; ok {
		r.success(reason).Inc()
	}
	r.comm.end()
}
