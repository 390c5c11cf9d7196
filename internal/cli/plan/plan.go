// Package plan is `rigscope plan`: the what-if planner on the command
// line. It predicts, for a model and a grid of configurations (TP size x
// allreduce backend x drafter x k), the decode, verify and draft times,
// tokens/s and the break-even acceptance length from this machine's
// measurements (engine/planner), measures what is missing with
// --calibrate, and with --check runs every configuration to set the
// measured tokens/s beside the prediction.
package plan

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"rigscope/engine"
	"rigscope/engine/planner"
	"rigscope/engine/tp"
	"rigscope/internal/cli"
	"rigscope/internal/safefile"
)

// CPUBackends are the allreduce backends CPU ranks offer, auto aside.
var CPUBackends = []string{"ring", "tree", "oneshot", "twoshot", "compressed", "compressed-bf16"}

// options are the parsed flags.
type options struct {
	model, draft, tokenizer, device, cacheDir, runs string
	allreduceTable                                  string
	ctx, tree, reps                                 int
	tp, k                                           []int
	backends, drafters                              []string
	calibrate, asJSON                               bool
	check                                           checkOptions
}

// Command is `rigscope plan`.
var Command = cli.Command{Name: "plan", Summary: Summary, Run: Run}

// Summary is the one-line description `rigscope help` shows.
const Summary = "predict tok/s and the break-even per TP size, backend, drafter and k from this machine's measurements"

// Run is `rigscope plan ARGS`.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if o.check.on {
		return runCheck(ctx, o, stdout, stderr)
	}
	s, err := open(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer s.eng.Close()
	preds, err := s.predict(ctx, o.calibrate, o.reps, stderr)
	if err != nil {
		return err
	}
	cacheNote, runsNote := s.plan.Notes()
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(Report{Shape: s.plan.Shape(), Cache: cacheNote, Runs: runsNote, Predictions: preds})
	}
	fmt.Fprintf(stdout, "# %s: %s\n# measurements: %s; acceptance: %s\n", s.plan.Shape().Name, s.plan.Shape().Key, cacheNote, runsNote)
	WriteTable(stdout, preds)
	if miss := planner.MissingOf(preds); len(miss) > 0 {
		fmt.Fprintf(stdout, "\n%d measurement(s) missing, first: %s.\nMeasure them on this machine (a short calibration through the engine, cached per machine and build): rigscope plan %s --calibrate\n",
			len(miss), miss[0], strings.Join(args, " "))
	}
	return nil
}

// Report is `plan --json`.
type Report struct {
	Shape       planner.Shape        `json:"shape"`
	Cache       string               `json:"measurements"`
	Runs        string               `json:"acceptance_runs"`
	Predictions []planner.Prediction `json:"predictions"`
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.model, "model", "", "target model (a path or synthetic:PRESET); required")
	fs.StringVar(&o.draft, "draft", "", "draft model for the model drafter")
	fs.StringVar(&o.tokenizer, "tokenizer", "", "tokenizer for llama2.c checkpoints")
	fs.StringVar(&o.device, "device", "cpu", "where the target runs")
	fs.StringVar(&o.cacheDir, "cache-dir", "", "calibration cache folder (default $RIGSCOPE_CACHE_DIR, else the user cache folder)")
	fs.StringVar(&o.runs, "runs", "", "run logs to read acceptance from (default: the panel's run log folder)")
	fs.StringVar(&o.allreduceTable, "allreduce-table", "", "add an allreduce table measured on this device (rigscope allreduce-bench [--device cuda] --json > FILE) to the measurements: a backend whose forward was not timed is predicted by swapping a timed forward's allreduce calls for its own")
	fs.IntVar(&o.ctx, "ctx", 0, "KV cache positions (0 = the model's, at most 4096 on the CPU; on a GPU the longest that fits)")
	fs.IntVar(&o.tree, "tree", 0, "tree branching per depth (0 = chain)")
	fs.IntVar(&o.reps, "reps", 7, "with --calibrate: repetitions per timed cell")
	tpFlag := fs.String("tp", "1,2,4,8", "TP sizes, comma list")
	kFlag := fs.String("k", "2,4", "draft lengths, comma list")
	backends := fs.String("allreduce", strings.Join(CPUBackends, ","), "allreduce backends, comma list (auto too)")
	drafters := fs.String("drafter", "", "drafters, comma list of none, ngram, model (default none,ngram and model with --draft)")
	fs.BoolVar(&o.calibrate, "calibrate", false, "measure what the predictions lack (allreduce, forward and draft times), then predict")
	fs.BoolVar(&o.asJSON, "json", false, "print the predictions as JSON")
	o.check.register(fs)
	if err := cli.ParseFlags(fs, args); err != nil {
		return o, err
	}
	if o.model == "" {
		return o, errors.New("plan: --model is required (a model path or synthetic:PRESET)")
	}
	var err error
	if o.tp, err = intList("--tp", *tpFlag, 1, tp.MaxRanks); err != nil {
		return o, err
	}
	if o.k, err = intList("--k", *kFlag, 1, 16); err != nil {
		return o, err
	}
	if o.tree < 0 || o.tree > 8 {
		return o, fmt.Errorf("plan: --tree %d outside 0..8", o.tree)
	}
	if o.reps < 2 || o.reps > 100 {
		return o, fmt.Errorf("plan: --reps %d outside 2..100", o.reps)
	}
	if err := o.parseBackends(*backends, fs); err != nil {
		return o, err
	}
	if *drafters == "" {
		*drafters = "none,ngram"
		if o.draft != "" {
			*drafters += ",model"
		}
	}
	for _, d := range strings.Split(*drafters, ",") {
		d = strings.TrimSpace(d)
		switch {
		case !slices.Contains([]string{"none", "ngram", "model", "eagle3"}, d):
			return o, fmt.Errorf("plan: --drafter %q: give none, ngram, model or eagle3", d)
		case (d == "model" || d == "eagle3") && o.draft == "":
			return o, fmt.Errorf("plan: the %s drafter needs --draft PATH", d)
		}
		o.drafters = append(o.drafters, d)
	}
	return o, o.check.validate()
}

// intList parses "1,2,4" with each value in lo..hi.
func intList(name, s string, lo, hi int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < lo || v > hi {
			return nil, fmt.Errorf("plan: %s: %q is not an integer in %d..%d", name, f, lo, hi)
		}
		out = append(out, v)
	}
	return out, nil
}

// session is an opened model with its planner.
type session struct {
	eng  *engine.Engine
	plan *planner.Session
	grid planner.Grid
}

// open loads the model, the measurements and the run logs.
func open(ctx context.Context, o options, stderr io.Writer) (*session, error) {
	eng, err := engine.Open(ctx, o.model, engine.Options{TokenizerPath: o.tokenizer, CtxLen: o.ctx, Device: o.device, CacheDir: o.cacheDir, LogDir: o.check.logDir})
	if err != nil {
		return nil, err
	}
	ps, err := planner.NewSession(eng, o.device, o.cacheDir, func(m string) { fmt.Fprintln(stderr, "plan: warning:", m) })
	if err != nil {
		eng.Close()
		return nil, err
	}
	if err := ps.ReadRuns(o.runs); err != nil {
		eng.Close()
		return nil, err
	}
	if o.allreduceTable != "" {
		if err := importTable(ps, o.allreduceTable, stderr); err != nil {
			eng.Close()
			return nil, err
		}
	}
	grid := planner.Grid{Device: o.device, TP: o.tp, Backends: o.backends, Drafters: o.drafters, DraftPath: o.draft, K: o.k, Tree: o.tree}
	return &session{eng: eng, plan: ps, grid: grid}, nil
}

// importTable reads allreduce-bench's JSON from path into the planner.
func importTable(ps *planner.Session, path string, stderr io.Writer) error {
	data, err := safefile.ReadFile(path, "allreduce table", allreduceTableLimit)
	if err != nil {
		return fmt.Errorf("plan: --allreduce-table: %w", err)
	}
	bt, err := planner.ReadAllReduceBench(data)
	if err != nil {
		return fmt.Errorf("plan: --allreduce-table %s: %w", path, err)
	}
	for _, s := range bt.Skipped {
		fmt.Fprintf(stderr, "plan: --allreduce-table %s: left out %s\n", path, s)
	}
	if err := ps.ImportAllReduce(bt); err != nil {
		return fmt.Errorf("plan: --allreduce-table %s: %w", path, err)
	}
	return nil
}

// allreduceTableLimit bounds an allreduce-bench JSON file.
const allreduceTableLimit = 64 << 20

// predict predicts the grid, measuring what is missing first when asked.
func (s *session) predict(ctx context.Context, measure bool, reps int, stderr io.Writer) ([]planner.Prediction, error) {
	if !measure {
		return s.plan.Plan(ctx, s.grid)
	}
	return s.plan.Measure(ctx, s.grid, planner.Calibration{Reps: reps,
		Progress: func(what string) { fmt.Fprintln(stderr, "plan: measuring", what) }})
}

// parseBackends reads --allreduce against the device's backends (the CPU's
// by default; a GPU's ranks have their own, and without the flag get them
// all).
func (o *options) parseBackends(list string, fs *flag.FlagSet) error {
	if o.device == "" || o.device == "cpu" {
		for _, b := range strings.Split(list, ",") {
			b = strings.TrimSpace(b)
			if err := tp.CheckBackend(b); err != nil {
				return fmt.Errorf("plan: --allreduce: %w", err)
			}
			o.backends = append(o.backends, b)
		}
		return nil
	}
	if err := engine.CheckDevice(o.device); err != nil {
		return fmt.Errorf("plan: --device: %w", err)
	}
	have := map[string]string{} // name -> why it cannot run ("" if it can)
	var all []string
	for _, b := range engine.AllReduceBackends(o.device) {
		have[b.Name] = b.Reason
		if b.Available {
			all = append(all, b.Name)
		}
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "allreduce" })
	if !set {
		o.backends = all
		return nil
	}
	for _, b := range strings.Split(list, ",") {
		b = strings.TrimSpace(b)
		why, ok := have[b]
		switch {
		case !ok:
			return fmt.Errorf("plan: --allreduce %q: not a backend of --device %s (have %s)", b, o.device, strings.Join(all, ", "))
		case why != "":
			return fmt.Errorf("plan: --allreduce %q on --device %s: %s", b, o.device, why)
		}
		o.backends = append(o.backends, b)
	}
	return nil
}
