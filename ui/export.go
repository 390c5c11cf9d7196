package ui

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"rigscope/engine"
	"rigscope/engine/metrics"
)

// ExportRuns writes the runs into dir in every export format of
// engine/metrics (metrics.Export: runs.jsonl, runs.csv, steps.csv,
// trace.json), each file atomically, and returns the paths written. The
// run summary CSV leads with the runs table's values (RunRow).
func ExportRuns(dir string, runs []*RunRecord) ([]string, error) {
	recs := make([]metrics.RunRecord, len(runs))
	for i, r := range runs {
		rec, err := r.metricsRecord()
		if err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		recs[i] = rec
	}
	return metrics.Export(dir, recs)
}

// runLogID is a run's id in its run log and exports.
func (r *RunRecord) runLogID() string { return strconv.Itoa(r.ID) }

// metricsRecord converts the run for engine/metrics' exporters: config and
// stats as their JSON, steps as samples laid out as spans on every TP rank,
// and the runs table's row as the summary columns.
func (r *RunRecord) metricsRecord() (metrics.RunRecord, error) {
	cfg, err := json.Marshal(r.Config)
	if err != nil {
		return metrics.RunRecord{}, fmt.Errorf("run %d: config: %w", r.ID, err)
	}
	stats, err := json.Marshal(r.Stats)
	if err != nil {
		return metrics.RunRecord{}, fmt.Errorf("run %d: stats: %w", r.ID, err)
	}
	rec := metrics.RunRecord{
		RunID: r.runLogID(), Model: r.Model, Started: r.Started, Ended: r.Started,
		Config: cfg, Stats: stats, Err: r.Err, Complete: true,
		Label: Describe(r.Config), BytesSent: r.Stats.BytesSent,
	}
	for _, st := range r.Steps {
		s := stepSample(st)
		rec.Steps = append(rec.Steps, s)
		rec.Spans = append(rec.Spans, metrics.StepSpans(s, r.Config.TP)...)
		rec.Ended = r.Started.Add(st.ElapsedTime)
	}
	row := RunRow(r)
	for i, name := range RunsCSVHeader {
		switch name {
		case "run_id", "model", "started", "error": // the CSV's own columns
		default:
			rec.Summary = append(rec.Summary, metrics.Field{Name: name, Value: row[i]})
		}
	}
	return rec, nil
}

// stepSample maps the engine's per-step event onto the metrics sample:
// ElapsedTime (since run start, at the step's end) is At, NewTokens is
// Tokens. StepStats carries no time outside draft and verify, so Other is 0.
func stepSample(st engine.StepStats) metrics.StepSample {
	return metrics.StepSample{
		Step: st.Step, At: st.ElapsedTime, Draft: st.Draft, Verify: st.Verify, AllReduce: st.AllReduce,
		Tokens: st.NewTokens, Drafted: st.Drafted, Accepted: st.Accepted,
	}
}

// RunsCSVHeader names the run summary fields the runs table shows and
// compares; the summary CSV carries the same values under the same names.
var RunsCSVHeader = []string{
	"run_id", "model", "started", "allreduce", "tp", "drafter", "k", "tree", "temperature", "top_p", "seed", "max_tokens",
	"generated_tokens", "decode_tokens_per_s", "ttft_ms", "stop_reason", "draft_accept_rate", "mean_accept_len",
	"allreduce_p50_us", "allreduce_p99_us", "bytes_moved", "error",
}

// RunRow is the run summary as text, in RunsCSVHeader's order.
func RunRow(r *RunRecord) []string {
	c, s := r.Config, r.Stats
	return []string{
		strconv.Itoa(r.ID), r.Model, r.Started.UTC().Format(time.RFC3339), c.AllReduce, strconv.Itoa(c.TP),
		c.Drafter.Kind, strconv.Itoa(c.Drafter.K), strconv.Itoa(c.Drafter.Tree),
		ftoa(float64(c.Sampling.Temperature)), ftoa(float64(c.Sampling.TopP)), strconv.FormatUint(c.Sampling.Seed, 10),
		strconv.Itoa(c.MaxTokens), strconv.Itoa(s.GeneratedTokens), fmt.Sprintf("%.2f", s.DecodeTokensPerS),
		fmt.Sprintf("%.2f", s.TimeToFirstTokenMs), s.StopReason, fmt.Sprintf("%.4f", acceptRate(s.AcceptedTokens, s.DraftTokens)),
		fmt.Sprintf("%.3f", s.MeanAcceptLen), us(r.AllReduceP50), us(r.AllReduceP99), strconv.FormatInt(r.BytesMoved, 10), r.Err,
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func us(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Microsecond)) }

func acceptRate(accepted, drafted int) float64 {
	if drafted == 0 {
		return 0
	}
	return float64(accepted) / float64(drafted)
}
