package metrics

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// WritePrometheus writes s in the Prometheus text exposition format. The
// speculative-decoding names follow vLLM's (spec_decode_num_drafts,
// ..._num_draft_tokens, ..._num_accepted_tokens, ..._per_pos), under the
// rigscope: prefix; allreduce latency is a summary per (backend, bytes).
func WritePrometheus(w io.Writer, s Snapshot) error {
	var drafts, accepted int64
	for n, c := range s.AcceptHist {
		drafts += int64(c)
		accepted += int64(n) * int64(c)
	}
	p := &promWriter{w: w}
	p.metric("rigscope:generation_tokens_total", "counter", "Tokens generated in the current run.", "", float64(s.Generated))
	p.metric("rigscope:tokens_per_second", "gauge", "Decode rate of the current run.", "", s.TokensPerS)
	p.metric("rigscope:spec_decode_num_drafts_total", "counter", "Speculative steps that drafted.", "", float64(drafts))
	p.metric("rigscope:spec_decode_num_draft_tokens_total", "counter", "Drafted tokens (up to k per step).", "", float64(s.DraftTokens))
	p.metric("rigscope:spec_decode_num_accepted_tokens_total", "counter", "Drafted tokens the target accepted.", "", float64(accepted))
	p.help("rigscope:spec_decode_num_accepted_tokens_per_pos", "gauge", "Acceptance rate at each draft position.")
	for i, r := range s.AcceptPerPos {
		p.sample("rigscope:spec_decode_num_accepted_tokens_per_pos", fmt.Sprintf(`position="%d"`, i), r)
	}
	p.metric("rigscope:spec_decode_mean_acceptance_length", "gauge", "1 + accepted/drafts (vLLM, SGLang).", "", s.MeanAcceptLen)
	p.metric("rigscope:spec_decode_break_even_acceptance_length", "gauge", "Acceptance length above which speculation pays.", "", s.BreakEven)
	p.metric("rigscope:allreduce_time_share", "gauge", "Share of step time spent in allreduce.", "", s.AllReduceShare)
	p.help("rigscope:allreduce_latency_seconds", "summary", "Allreduce latency per backend and message-size bucket.")
	for _, l := range s.AllReduce {
		lbl := fmt.Sprintf(`backend=%q,bytes="%d"`, l.Backend, l.Bytes)
		p.sample("rigscope:allreduce_latency_seconds", lbl+`,quantile="0.5"`, l.P50.Seconds())
		p.sample("rigscope:allreduce_latency_seconds", lbl+`,quantile="0.99"`, l.P99.Seconds())
		p.sample("rigscope:allreduce_latency_seconds_count", lbl, float64(l.Count))
		p.sample("rigscope:allreduce_latency_seconds_sum", lbl, l.Mean.Seconds()*float64(l.Count))
	}
	p.help("rigscope:interconnect_bytes_sent_total", "counter", "Bytes each rank sent, as the engine counts them.")
	for r, b := range s.RankBytesSent {
		p.sample("rigscope:interconnect_bytes_sent_total", fmt.Sprintf(`rank="%d"`, r), float64(b))
	}
	p.help("rigscope:interconnect_bytes_received_total", "counter", "Bytes each rank received, as the engine counts them.")
	for r, b := range s.RankBytesRecv {
		p.sample("rigscope:interconnect_bytes_received_total", fmt.Sprintf(`rank="%d"`, r), float64(b))
	}
	return p.err
}

// PrometheusHandler serves the snapshot that snap returns at each scrape.
func PrometheusHandler(snap func() Snapshot) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		if err := WritePrometheus(w, snap()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
}

// promWriter keeps the first write error.
type promWriter struct {
	w   io.Writer
	err error
}

func (p *promWriter) help(name, typ, help string) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
}

func (p *promWriter) sample(name, labels string, v float64) {
	if p.err != nil {
		return
	}
	if labels != "" {
		name += "{" + labels + "}"
	}
	_, p.err = fmt.Fprintf(p.w, "%s %s\n", name, strconv.FormatFloat(v, 'g', -1, 64))
}

func (p *promWriter) metric(name, typ, help, labels string, v float64) {
	p.help(name, typ, help)
	p.sample(name, labels, v)
}
