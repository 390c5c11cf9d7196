package ui

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Export file names written by ExportRuns into the chosen folder.
const (
	ExportJSONLName   = "runs.jsonl"
	ExportRunsCSVName = "runs.csv"
	ExportStepsCSV    = "steps.csv"
	ExportTraceName   = "trace.json"
)

// ExportRuns writes the runs in every export format into dir, each file
// atomically, and returns the paths written.
func ExportRuns(dir string, runs []*RunRecord) ([]string, error) {
	files := []struct {
		name  string
		write func(io.Writer, []*RunRecord) error
	}{
		{ExportJSONLName, WriteJSONL},
		{ExportRunsCSVName, WriteRunsCSV},
		{ExportStepsCSV, WriteStepsCSV},
		{ExportTraceName, WriteChromeTrace},
	}
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := WriteFileAtomic(p, func(w io.Writer) error { return f.write(w, runs) }); err != nil {
			return paths, fmt.Errorf("export: %w", err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// WriteFileAtomic writes path through a temporary file in the same folder
// that is synced and renamed over path, so readers see the old or the new
// file, never a part.
func WriteFileAtomic(path string, write func(io.Writer) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriter(tmp)
	if err = write(bw); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteJSONL writes each run as its event log: run_start with the full
// config, one step line per step, run_end with the summary.
func WriteJSONL(w io.Writer, runs []*RunRecord) error {
	enc := json.NewEncoder(w)
	for _, r := range runs {
		cfg, stats := r.Config, r.Stats
		if err := enc.Encode(LogEvent{Type: "run_start", RunID: r.ID, Time: r.Started, Model: r.Model, Config: &cfg}); err != nil {
			return err
		}
		for i := range r.Steps {
			st := r.Steps[i]
			if err := enc.Encode(LogEvent{Type: "step", RunID: r.ID, Time: r.Started.Add(st.ElapsedTime), Step: &st}); err != nil {
				return err
			}
		}
		end := r.Started
		if n := len(r.Steps); n > 0 {
			end = end.Add(r.Steps[n-1].ElapsedTime)
		}
		if err := enc.Encode(LogEvent{Type: "run_end", RunID: r.ID, Time: end, Stats: &stats, Error: r.Err}); err != nil {
			return err
		}
	}
	return nil
}

// RunsCSVHeader is the header of the run summary CSV; the runs table shows
// the same values.
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

// WriteRunsCSV writes one summary row per run.
func WriteRunsCSV(w io.Writer, runs []*RunRecord) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(RunsCSVHeader); err != nil {
		return err
	}
	for _, r := range runs {
		if err := cw.Write(RunRow(r)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// StepsCSVHeader names the per-step telemetry columns, units in the names.
var StepsCSVHeader = []string{"run_id", "step", "t_ms", "draft_ms", "verify_ms", "allreduce_ms", "drafted_tokens", "accepted_tokens", "new_tokens"}

// WriteStepsCSV writes one telemetry sample per step of every run.
func WriteStepsCSV(w io.Writer, runs []*RunRecord) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(StepsCSVHeader); err != nil {
		return err
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)) }
	for _, r := range runs {
		for _, st := range r.Steps {
			if err := cw.Write([]string{
				strconv.Itoa(r.ID), strconv.Itoa(st.Step), ms(st.ElapsedTime), ms(st.Draft), ms(st.Verify), ms(st.AllReduce),
				strconv.Itoa(st.Drafted), strconv.Itoa(st.Accepted), strconv.Itoa(st.NewTokens),
			}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// traceEvent is one Chrome trace event (the JSON object format Perfetto and
// chrome://tracing read); times in microseconds.
type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"` // X = complete span, C = counter, M = metadata
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// WriteChromeTrace writes the runs as a Chrome trace: one process per run,
// one thread per TP rank with draft, verify and allreduce spans per step,
// and counters for tokens per step and the bytes each step moved over PCIe
// (the allreduce traffic per rank, as the engine reports it).
func WriteChromeTrace(w io.Writer, runs []*RunRecord) error {
	evs := []traceEvent{}
	for _, r := range runs {
		pid := r.ID
		evs = append(evs, traceEvent{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": fmt.Sprintf("run %d (%s)", r.ID, Describe(r.Config))}})
		tp := max(r.Config.TP, 1)
		for rank := range tp {
			evs = append(evs, traceEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: rank, Args: map[string]any{"name": fmt.Sprintf("rank %d", rank)}})
		}
		var bytesPerStep float64
		if n := len(r.Steps); n > 0 && r.BytesMoved > 0 {
			bytesPerStep = float64(r.BytesMoved) / float64(n) / float64(tp)
		}
		for _, st := range r.Steps {
			end := float64(st.ElapsedTime) / 1e3
			verify := float64(st.Verify) / 1e3
			draft := float64(st.Draft) / 1e3
			ar := float64(st.AllReduce) / 1e3
			vStart := end - verify
			args := map[string]any{"step": st.Step, "drafted": st.Drafted, "accepted": st.Accepted}
			for rank := range tp {
				if draft > 0 && rank == 0 { // the drafter runs once, beside rank 0
					evs = append(evs, traceEvent{Name: "draft", Cat: "spec", Ph: "X", Ts: vStart - draft, Dur: draft, Pid: pid, Tid: rank, Args: args})
				}
				evs = append(evs, traceEvent{Name: "verify", Cat: "spec", Ph: "X", Ts: vStart, Dur: verify, Pid: pid, Tid: rank, Args: args})
				if ar > 0 {
					evs = append(evs, traceEvent{Name: "allreduce " + r.Config.AllReduce, Cat: "comm", Ph: "X", Ts: end - ar, Dur: ar, Pid: pid, Tid: rank})
				}
			}
			evs = append(evs, traceEvent{Name: "tokens", Ph: "C", Ts: end, Pid: pid, Args: map[string]any{"new": st.NewTokens, "accepted": st.Accepted}})
			if bytesPerStep > 0 && verify > 0 {
				evs = append(evs, traceEvent{Name: "PCIe throughput (MB/s)", Ph: "C", Ts: vStart, Pid: pid, Args: map[string]any{"per_rank": bytesPerStep / verify}})
				evs = append(evs, traceEvent{Name: "PCIe throughput (MB/s)", Ph: "C", Ts: end, Pid: pid, Args: map[string]any{"per_rank": 0}})
			}
		}
	}
	return json.NewEncoder(w).Encode(map[string]any{"traceEvents": evs, "displayTimeUnit": "ms"})
}
