package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"rigscope/engine/metrics"
)

// ExportRuns writes the runs into dir in every export format of
// engine/metrics (metrics.Export: runs.jsonl, runs.csv, steps.csv,
// trace.json), each file atomically; cancelling ctx stops it and leaves no
// temp file. It returns the paths written. The run summary CSV leads with
// the runs table's figures, raw (runFields).
func ExportRuns(ctx context.Context, dir string, runs []*RunRecord) ([]string, error) {
	recs := make([]metrics.RunRecord, len(runs))
	for i, r := range runs {
		rec, err := r.metricsRecord()
		if err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		recs[i] = rec
	}
	return metrics.Export(ctx, dir, recs)
}

// runLogID is a run's id in its exports: the engine's (its run log's) when
// known, else the panel's number.
func (r *RunRecord) runLogID() string {
	if r.Stats.RunID != "" {
		return r.Stats.RunID
	}
	return strconv.Itoa(r.ID)
}

// metricsRecord converts the run for engine/metrics' exporters: config and
// stats as their JSON, the steps (the engine's records) laid out as spans
// on every TP rank, and the runs table's figures as the summary columns.
func (r *RunRecord) metricsRecord() (metrics.RunRecord, error) {
	cfg, err := json.Marshal(r.Config)
	if err != nil {
		return metrics.RunRecord{}, fmt.Errorf("run %d: config: %w", r.ID, err)
	}
	stats, err := json.Marshal(r.Stats)
	if err != nil {
		return metrics.RunRecord{}, fmt.Errorf("run %d: stats: %w", r.ID, err)
	}
	// A run the user stopped did not complete: it is exported as such
	// (complete=false in the CSV, no run_end in the JSONL, "cancelled" in
	// its label); its figures are still in the CSV's stats columns.
	cancelled := r.Stats.StopReason == "cancelled"
	label := Describe(r.Config)
	if cancelled {
		label += " · cancelled"
	}
	rec := metrics.RunRecord{
		RunID: r.runLogID(), Model: r.Model, Started: r.Started, Ended: r.Started,
		Config: cfg, Stats: stats, Err: r.Err, Complete: !cancelled,
		Label: label, BytesSent: r.Stats.BytesSent,
	}
	rec.Steps = slices.Clone(r.Steps)
	for _, st := range r.Steps {
		rec.Spans = append(rec.Spans, metrics.StepSpans(st, r.Config.TP)...)
		rec.Ended = r.Started.Add(st.At)
	}
	for _, f := range runFields {
		switch f.csv {
		case "run_id", "model", "started", "error": // the CSV's own columns
		default:
			rec.Summary = append(rec.Summary, metrics.Field{Name: f.csv, Value: f.raw(r)})
		}
	}
	return rec, nil
}
