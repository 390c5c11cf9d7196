package ui

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"rigscope/engine/stepstats"
)

// na is what a figure that does not apply to a run shows.
const na = "—"

// better says which way a figure improves, for the compare view.
type better int

const (
	neutral better = iota
	higher
	lower
)

// runField is one summary figure of a run, from the engine's stats (the UI
// only formats): its CSV name and raw value (the export), its name in
// words and its human text (the runs table and the compare view), and for
// numbers the value the compare view's change is computed from.
type runField struct {
	csv, words string
	raw        func(r *RunRecord) string          // "" where it does not apply
	text       func(r *RunRecord) string          // na where it does not apply
	num        func(r *RunRecord) (float64, bool) // nil: not a number; false: does not apply
	better     better
}

// textField is a field shown as its raw value.
func textField(csv, words string, get func(r *RunRecord) string) runField {
	return runField{csv: csv, words: words, raw: get, text: func(r *RunRecord) string {
		if v := get(r); v != "" {
			return v
		}
		return na
	}}
}

// numField is a numeric field: get gives the value (false where it does
// not apply), raw formats it for the CSV and human for people.
func numField(csv, words string, b better, get func(r *RunRecord) (float64, bool), raw, human func(float64) string) runField {
	return runField{csv: csv, words: words, better: b, num: get,
		raw: func(r *RunRecord) string {
			if v, ok := get(r); ok {
				return raw(v)
			}
			return ""
		},
		text: func(r *RunRecord) string {
			if v, ok := get(r); ok {
				return human(v)
			}
			return na
		}}
}

func speculative(r *RunRecord) bool {
	return r.Config.Drafter.Kind != DrafterNone && r.Config.Drafter.Kind != ""
}

// communicates says the run had more than one rank (so allreduce figures
// apply).
func communicates(r *RunRecord) bool { return r.Config.TP > 1 }

func always(f func(r *RunRecord) float64) func(r *RunRecord) (float64, bool) {
	return func(r *RunRecord) (float64, bool) { return f(r), true }
}

func when(ok func(r *RunRecord) bool, f func(r *RunRecord) float64) func(r *RunRecord) (float64, bool) {
	return func(r *RunRecord) (float64, bool) {
		if !ok(r) {
			return 0, false
		}
		return f(r), true
	}
}

func fixed(digits int) func(float64) string {
	return func(v float64) string { return strconv.FormatFloat(v, 'f', digits, 64) }
}

func integer(v float64) string { return strconv.FormatInt(int64(v), 10) }

// fmtDuration shows a duration with an SI prefix and one decimal: 22.0 ms,
// 50.0 µs, 1.5 s.
func fmtDuration(d time.Duration) string {
	if d == 0 {
		return "0 s"
	}
	v, prefix := humanize.ComputeSI(d.Seconds())
	return fmt.Sprintf("%.1f %ss", v, prefix)
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// backendText names the allreduce backend a run used; for auto, the one
// it picked per message size ("auto: ring ≤ 4 KiB, twoshot ≤ 64 KiB").
func backendText(r *RunRecord) string {
	if !communicates(r) {
		return na + " (1 rank)"
	}
	c := r.Config.AllReduce
	if c == "nccl" && !r.Config.NCCL.IsZero() {
		return r.Config.NCCL.String() // the run's NCCL settings: nccl(Tree,LL128,channels 2..8)
	}
	used := r.Stats.AllReduceBySize
	if len(used) == 0 {
		return c
	}
	var parts []string
	for _, u := range used {
		parts = append(parts, fmt.Sprintf("%s ≤ %s", u.Backend, humanize.IBytes(uint64(u.Bytes))))
	}
	if c == "auto" {
		return "auto: " + strings.Join(parts, ", ")
	}
	return c
}

// backendRaw is the backend per size for the CSV: "4096:ring 65536:twoshot".
func backendRaw(r *RunRecord) string {
	var parts []string
	for _, u := range r.Stats.AllReduceBySize {
		parts = append(parts, fmt.Sprintf("%d:%s", u.Bytes, u.Backend))
	}
	return strings.Join(parts, " ")
}

func drafterText(r *RunRecord) string {
	d := r.Config.Drafter
	if !speculative(r) {
		return DrafterNone
	}
	s := fmt.Sprintf("%s k=%d", d.Kind, d.K)
	if d.Tree > 0 {
		s += fmt.Sprintf(" tree %d", d.Tree)
	}
	return s
}

// verdictText is the verdict in a few words with its interval.
func verdictText(r *RunRecord) string {
	if !speculative(r) {
		return na
	}
	v := r.Stats.Verdict
	ci := fmt.Sprintf("%.2fx (%.2f–%.2f)", v.Speedup, v.SpeedupLo, v.SpeedupHi)
	switch v.State {
	case stepstats.Pays:
		return "pays " + ci
	case stepstats.DoesNotPay:
		return "does not pay " + ci
	case stepstats.CannotPay:
		return fmt.Sprintf("cannot pay at k=%d", r.Config.Drafter.K)
	case stepstats.TooClose:
		return "too close " + ci
	case stepstats.TooFew:
		return "too few steps"
	case stepstats.Measuring:
		return "measuring"
	}
	return na
}

func baselineText(r *RunRecord) string {
	switch r.Stats.Verdict.BaselineSource {
	case stepstats.BaselineSession:
		return "plain run in this session"
	case stepstats.BaselineInRun:
		return fmt.Sprintf("%d plain steps in the run", r.Stats.Verdict.BaselineSteps)
	}
	return ""
}

// runFields are the run summary figures, in CSV order.
var runFields = []runField{
	{csv: "run_id", words: "run", raw: func(r *RunRecord) string { return strconv.Itoa(r.ID) }, text: func(r *RunRecord) string {
		if r.FromLog {
			return "log"
		}
		return strconv.Itoa(r.ID)
	}},
	textField("model", "model", func(r *RunRecord) string { return r.Model }),
	textField("started", "started", func(r *RunRecord) string { return r.Started.UTC().Format(time.RFC3339) }),
	{csv: "time", words: "time", raw: func(r *RunRecord) string { return r.Started.UTC().Format(time.RFC3339) }, text: func(r *RunRecord) string {
		if r.Started.IsZero() {
			return na
		}
		return r.Started.Local().Format("Jan 2 15:04")
	}},
	textField("note", "note", func(r *RunRecord) string { return r.Note }),
	{csv: "allreduce", words: "allreduce backend", raw: func(r *RunRecord) string { return r.Config.AllReduce }, text: backendText},
	textField("allreduce_used", "allreduce backend per message size", backendRaw),
	numField("tp", "TP size", neutral, always(func(r *RunRecord) float64 { return float64(r.Config.TP) }), integer, integer),
	{csv: "drafter", words: "drafter", raw: func(r *RunRecord) string { return r.Config.Drafter.Kind }, text: drafterText},
	numField("k", "draft length k", neutral, when(speculative, func(r *RunRecord) float64 { return float64(r.Config.Drafter.K) }), integer, integer),
	numField("tree", "tree branching (0 = chain)", neutral, when(speculative, func(r *RunRecord) float64 { return float64(r.Config.Drafter.Tree) }), integer, integer),
	numField("temperature", "temperature", neutral, always(func(r *RunRecord) float64 { return float64(r.Config.Sampling.Temperature) }), ftoa, ftoa),
	numField("top_p", "top-p", neutral, always(func(r *RunRecord) float64 { return float64(r.Config.Sampling.TopP) }), ftoa, ftoa),
	textField("seed", "seed", func(r *RunRecord) string { return strconv.FormatUint(r.Config.Sampling.Seed, 10) }),
	numField("max_tokens", "max tokens", neutral, always(func(r *RunRecord) float64 { return float64(r.Config.MaxTokens) }), integer, integer),
	numField("generated_tokens", "tokens generated", neutral, always(func(r *RunRecord) float64 { return float64(r.Stats.GeneratedTokens) }), integer, integer),
	numField("decode_tokens_per_s", "decode speed", higher, always(func(r *RunRecord) float64 { return r.Stats.DecodeTokensPerS }),
		fixed(2), func(v float64) string { return fmt.Sprintf("%.1f tok/s", v) }),
	numField("ttft_ms", "time to first token", lower, always(func(r *RunRecord) float64 { return r.Stats.TimeToFirstTokenMs }),
		fixed(2), func(v float64) string { return fmtDuration(ms(v)) }),
	textField("stop_reason", "stop reason", func(r *RunRecord) string { return r.Stats.StopReason }),
	numField("draft_accept_rate", "drafted tokens accepted", higher, when(speculative, func(r *RunRecord) float64 { return r.Stats.DraftAcceptRate }),
		fixed(4), func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }),
	numField("mean_accept_len", "mean acceptance length", higher, when(speculative, func(r *RunRecord) float64 { return r.Stats.MeanAcceptLen }),
		fixed(3), func(v float64) string { return fmt.Sprintf("%.2f tokens/step", v) }),
	{csv: "verdict", words: "speculation verdict", raw: func(r *RunRecord) string {
		if speculative(r) {
			return r.Stats.Verdict.State
		}
		return ""
	}, text: verdictText},
	numField("speedup", "speedup over plain decoding", higher, when(func(r *RunRecord) bool { return speculative(r) && r.Stats.Verdict.Speedup > 0 },
		func(r *RunRecord) float64 { return r.Stats.Verdict.Speedup }), fixed(3), func(v float64) string { return fmt.Sprintf("%.2fx", v) }),
	textField("baseline_source", "baseline measured from", func(r *RunRecord) string {
		if speculative(r) {
			return baselineText(r)
		}
		return ""
	}),
	numField("allreduce_p50_us", "allreduce latency p50", lower, when(communicates, func(r *RunRecord) float64 { return r.Stats.AllReduceP50Us }),
		fixed(1), func(v float64) string { return fmtDuration(time.Duration(v * 1e3)) }),
	numField("allreduce_p99_us", "allreduce latency p99", lower, when(communicates, func(r *RunRecord) float64 { return r.Stats.AllReduceP99Us }),
		fixed(1), func(v float64) string { return fmtDuration(time.Duration(v * 1e3)) }),
	numField("bytes_moved", "bytes moved between ranks", neutral, when(communicates, func(r *RunRecord) float64 { return float64(r.Stats.BytesMoved) }),
		integer, func(v float64) string { return humanize.IBytes(uint64(v)) }),
	textField("error", "error", func(r *RunRecord) string { return r.Err }),
	textField("source", "started by", func(r *RunRecord) string {
		if r.Source == "" {
			return "panel"
		}
		return r.Source
	}),
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', 6, 32) }

// fieldIndex is runFields' index of a CSV name.
func fieldIndex(csv string) int {
	for i, f := range runFields {
		if f.csv == csv {
			return i
		}
	}
	panic("ui: no run field " + csv) // a programming error in a table below
}

// change says how figure f moved from run a to run b, marked better or
// worse where the figure has a direction.
func change(f runField, a, b *RunRecord) string {
	if f.num == nil {
		if f.raw(a) == f.raw(b) {
			return "="
		}
		return "differs"
	}
	x, okA := f.num(a)
	y, okB := f.num(b)
	switch {
	case !okA && !okB:
		return "="
	case !okA || !okB:
		return "differs"
	case x == y:
		return "="
	case x == 0 || math.IsNaN(x) || math.IsNaN(y):
		return "differs"
	}
	s := fmt.Sprintf("%+.1f%%", 100*(y-x)/x)
	switch {
	case f.better == higher && y > x, f.better == lower && y < x:
		return s + " better"
	case f.better != neutral:
		return s + " worse"
	}
	return s
}
