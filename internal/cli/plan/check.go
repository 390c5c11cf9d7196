package plan

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"rigscope/engine"
	"rigscope/engine/planner"
	"rigscope/internal/fixtures"
)

// checkOptions are --check's flags.
type checkOptions struct {
	on                  bool
	rounds, maxTokens   int
	prompts, promptLen  int
	prompt              string
	logDir              string // the acceptance runs' logs (a temporary folder)
	jsonOut             string
	keepCache           bool
	warmup              bool
	maxTime             time.Duration
	maxErr, orderMargin float64
}

func (c *checkOptions) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.on, "check", false, "measure every configuration of the grid (runs alternated over --rounds) and print the prediction beside the measurement: median error and backend ordering")
	fs.IntVar(&c.rounds, "rounds", 3, "with --check: passes over the grid, alternately forwards and backwards; a configuration's measurement is the median of its rounds")
	fs.StringVar(&c.jsonOut, "json-out", "", "with --check: also write the report as JSON to this file (every round's prediction and measurement)")
	fs.BoolVar(&c.warmup, "warmup", false, "with --check: run each configuration once unmeasured right before its measured run (on a GPU: the step graphs, dropped when the backend changes between runs, are captured then, as the planner's timed forwards do in their warm-up)")
	fs.DurationVar(&c.maxTime, "max-time", 0, "with --check: start no round that would end past this much time from the start, judging by the longest round so far (the first, which pays the loads, only until a second is done), and report the rounds done (0: every round)")
	fs.BoolVar(&c.keepCache, "keep-cache", false, "with --check: round 1 predicts from the cached measurements instead of measuring afresh")
	fs.IntVar(&c.maxTokens, "max-tokens", 32, "with --check: tokens per run")
	fs.IntVar(&c.prompts, "prompts", 2, "with --check: the first N gocoder reference prompts (../shared/models/reference-public.json)")
	fs.IntVar(&c.promptLen, "prompt-len", 64, "with --check: cut each prompt to its last N tokens")
	fs.StringVar(&c.prompt, "prompt", "", "with --check: one text prompt instead of the reference prompts")
	fs.Float64Var(&c.maxErr, "max-error", 0.15, "with --check: the median absolute error allowed")
	fs.Float64Var(&c.orderMargin, "order-margin", 0.20, "with --check: backends whose measured tok/s differ by more than this must be predicted in the same order")
}

func (c *checkOptions) validate() error {
	switch {
	case !c.on:
		return nil
	case c.rounds < 1 || c.rounds > 20:
		return fmt.Errorf("plan: --rounds %d outside 1..20", c.rounds)
	case c.maxTokens < 2 || c.maxTokens > 4096:
		return fmt.Errorf("plan: --max-tokens %d outside 2..4096", c.maxTokens)
	case c.prompts < 1:
		return fmt.Errorf("plan: --prompts %d: give at least 1", c.prompts)
	}
	return nil
}

// CheckRow is one configuration: predicted against measured tok/s.
type CheckRow struct {
	Config    planner.Config  `json:"config"`
	Predicted planner.Range   `json:"predicted_tokens_per_s"` // the best round's
	Rounds    []planner.Range `json:"predicted_per_round"`
	Measured  []float64       `json:"measured_tokens_per_s"` // per round
	// Best is the fastest round (load from other work only slows a run;
	// the prediction likewise is the round whose measurements were least
	// disturbed); Median the median round.
	Best   float64 `json:"measured_tokens_per_s_best"`
	Median float64 `json:"measured_tokens_per_s_median"`
	Error  float64 `json:"error"` // (predicted - measured) / measured
	// RoundError is the median over rounds of each round's prediction
	// against the same round's run (both taken within seconds, under the
	// same load).
	RoundError float64 `json:"round_error"`
	Missing    string  `json:"missing,omitempty"`
}

// OrderPair is two backends at one TP size, drafter and k whose measured
// tok/s differ by more than the margin.
type OrderPair struct {
	Group             string  `json:"group"`
	Faster            string  `json:"faster"`
	Slower            string  `json:"slower"`
	MeasuredRatio     float64 `json:"measured_ratio"`
	PredictedRatio    float64 `json:"predicted_ratio"`
	PredictedSameSide bool    `json:"agrees"`
	// Separated says every round of the faster beat every round of the
	// slower: a difference beyond the runs' own round-to-round spread.
	Separated bool `json:"separated"`
}

// CheckReport is `plan --check --json`.
type CheckReport struct {
	Rows        []CheckRow `json:"rows"`
	MedianError float64    `json:"median_abs_error"`
	// MedianRoundError is the median of the rows' |RoundError|.
	MedianRoundError float64     `json:"median_abs_round_error"`
	Pairs            []OrderPair `json:"order_pairs"`
	Agreeing         int         `json:"order_agreeing"`
	// ByTP compares the backends at each TP size over all its drafters
	// and k (geometric means of the best rounds and of the predictions).
	ByTP         []OrderPair `json:"order_pairs_per_tp"`
	ByTPAgreeing int         `json:"order_per_tp_agreeing"`
	// Paired compares the backends of each TP size, drafter and k round
	// by round (see pairedOrder); ByTPSize is the closing table.
	Paired         []OrderPair `json:"order_pairs_paired"`
	PairedAgreeing int         `json:"order_paired_agreeing"`
	// PairedByTP pools each TP size's drafters and k (and rounds).
	PairedByTP         []OrderPair `json:"order_pairs_paired_per_tp"`
	PairedByTPAgreeing int         `json:"order_paired_per_tp_agreeing"`
	ByTPSize           []TPSummary `json:"per_tp"`
	LoadBefore         string      `json:"loadavg_before"`
	LoadAfter          string      `json:"loadavg_after"`
	Elapsed            float64     `json:"elapsed_s"`
	Setup              string      `json:"setup"`
}

// runCheck: (1) earlier runs: each drafter and k once over the prompts at
// TP 1, logged, read back as the planner reads any run log (the
// acceptance model); (2) each of --rounds rounds, TP size by TP size, the
// planner measures afresh and predicts, then that TP size's
// configurations run over the prompts in blocks, the backends of one TP size, drafter and k back to
// back (runOrder; each (TP, backend)'s plain run first in round 1, so
// speculative runs have a session baseline); (3) the table, the median
// error and the backend ordering, best rounds and paired.
func runCheck(ctx context.Context, o options, stdout, stderr io.Writer) error {
	start := time.Now()
	loadBefore := loadavg()
	dir, err := os.MkdirTemp("", "rigscope-plan-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	o.check.logDir = filepath.Join(dir, "runs")
	o.runs = o.check.logDir
	if !o.check.keepCache {
		// The check's measurements stay out of the machine's cache.
		o.cacheDir = filepath.Join(dir, "cache")
	}
	prompts, promptWords, err := checkPrompts(o)
	if err != nil {
		return err
	}
	s, err := open(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer s.eng.Close()
	base := engine.RunConfig{MaxTokens: o.check.maxTokens, IgnoreEOS: true, TP: 1}
	run := func(cfg planner.Config) (float64, error) {
		rc := base
		rc.TP, rc.AllReduce = cfg.TP, cfg.Backend
		if cfg.TP == 1 {
			rc.AllReduce = "oneshot" // unused at TP 1
		}
		if cfg.Speculative() {
			rc.Drafter = engine.DrafterConfig{Kind: cfg.Drafter, Path: cfg.DrafterPath, K: cfg.K, Tree: cfg.Tree}
		}
		if o.check.warmup {
			for _, p := range prompts {
				rc.PromptIDs, rc.Prompt = p.ids, p.text
				if _, err := s.eng.Run(ctx, rc, nil); err != nil {
					return 0, fmt.Errorf("plan --check: %s (warm-up): %w", cfg, err)
				}
			}
		}
		var tokens float64
		var secs float64
		for _, p := range prompts {
			rc.PromptIDs, rc.Prompt = p.ids, p.text
			st, err := s.eng.Run(ctx, rc, nil)
			if err != nil {
				return 0, fmt.Errorf("plan --check: %s: %w", cfg, err)
			}
			if n := st.GeneratedTokens - 1; n > 0 && st.DecodeTokensPerS > 0 {
				tokens += float64(n)
				secs += float64(n) / st.DecodeTokensPerS
			}
		}
		if secs == 0 {
			return 0, fmt.Errorf("plan --check: %s decoded nothing", cfg)
		}
		return tokens / secs, nil
	}
	// (1) The earlier runs the acceptance model reads, after a plain run
	// so they, like the runs measured later, need no baseline steps of
	// their own.
	if _, err := run(planner.Config{Device: o.device, TP: 1, Drafter: "none"}); err != nil {
		return err
	}
	for _, d := range o.drafters {
		if d == "none" {
			continue
		}
		for _, k := range o.k {
			fmt.Fprintf(stderr, "plan --check: earlier run: %s k=%d at TP 1\n", d, k)
			path := ""
			if d == "model" || d == "eagle3" {
				path = o.draft
			}
			if _, err := run(planner.Config{Device: o.device, TP: 1, Drafter: d, DrafterPath: path, K: k, Tree: o.tree}); err != nil {
				return err
			}
		}
	}
	if err := s.plan.ReadRuns(o.runs); err != nil {
		return err
	}
	// (2) and (3): each round, TP size by TP size (ascending, then
	// descending the next round), the planner measures what it needs
	// afresh and predicts that TP size's configurations, which then run at
	// once, so a prediction and its runs see the same stretch of the
	// machine's load. A configuration's prediction is its best round's
	// (the least disturbed measurements), its measurement its best run.
	configs := s.grid.Configs()
	rows := make([]CheckRow, len(configs))
	index := map[planner.Config]int{}
	for i, c := range configs {
		rows[i].Config = c
		index[c] = i
	}
	rounds, longest := 0, time.Duration(0)
	for round := range o.check.rounds {
		if o.check.maxTime > 0 && round > 0 && time.Since(start)+longest > o.check.maxTime {
			fmt.Fprintf(stderr, "plan --check: stopping after %d round(s): another would end past --max-time %s\n", round, o.check.maxTime)
			break
		}
		roundStart := time.Now()
		rounds = round + 1
		if round > 0 || !o.check.keepCache {
			s.plan.Forget()
		}
		fmt.Fprintf(stderr, "plan --check: round %d of %d: each TP size measured, then run\n", round+1, o.check.rounds)
		tps := slices.Clone(s.grid.TP)
		if round%2 == 1 {
			slices.Reverse(tps)
		}
		order := runOrder(rows, round)
		for _, n := range tps {
			sub := s.grid
			sub.TP = []int{n}
			preds, err := s.plan.Measure(ctx, sub, planner.Calibration{Reps: o.reps,
				Progress: func(what string) { fmt.Fprintln(stderr, "plan: measuring", what) }})
			if err != nil {
				return err
			}
			for _, p := range preds {
				i, ok := index[p.Config]
				if !ok {
					return fmt.Errorf("plan --check: %s predicted outside the grid", p.Config)
				}
				row := &rows[i]
				switch {
				case p.Unfit != "":
					row.Missing = p.Unfit
				case !p.OK():
					row.Missing = p.Missing[0].String()
				default:
					row.Missing = ""
					row.Rounds = append(row.Rounds, p.TokS)
				}
			}
			for _, i := range order {
				if rows[i].Config.TP != n || rows[i].Missing != "" {
					continue
				}
				v, err := run(rows[i].Config)
				if err != nil {
					return err
				}
				rows[i].Measured = append(rows[i].Measured, v)
			}
		}
		// The first round pays the loads (a GPU's kernels compiled, the
		// weights uploaded): the later ones are judged by their own.
		if d := time.Since(roundStart); round <= 1 {
			longest = d
		} else {
			longest = max(longest, d)
		}
	}
	rep := CheckReport{Rows: rows, LoadBefore: loadBefore, LoadAfter: loadavg(), Elapsed: time.Since(start).Seconds(),
		Setup: fmt.Sprintf("%s on %s; %s; %d tokens per run, %d round(s), each round measuring each TP size afresh and running its configurations at once%s; per configuration the best round of each (the least disturbed by other work on the machine); acceptance from earlier TP 1 runs of the same prompts",
			s.plan.Shape().Name, o.device, promptWords, o.check.maxTokens, rounds, warmWords(o.check.warmup))}
	rep.summarize(o.check.orderMargin)
	if o.check.jsonOut != "" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fmt.Errorf("plan --check: %w", err)
		}
		if err := os.WriteFile(o.check.jsonOut, data, 0o644); err != nil {
			return fmt.Errorf("plan --check: --json-out: %w", err)
		}
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.write(stdout, o.check.maxErr)
	return nil
}

func warmWords(on bool) string {
	if on {
		return ", each run after an unmeasured one of the same configuration"
	}
	return ""
}

// loadavg is /proc/loadavg's first three fields ("" when unreadable).
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// checkPrompt is one prompt of the check: ids or text.
type checkPrompt struct {
	ids  []int32
	text string
}

// checkPrompts is --prompt, or the first --prompts gocoder reference
// prompts cut to --prompt-len tokens.
func checkPrompts(o options) ([]checkPrompt, string, error) {
	if o.check.prompt != "" {
		return []checkPrompt{{text: o.check.prompt}}, fmt.Sprintf("prompt %q", o.check.prompt), nil
	}
	dir := fixtures.ModelsDir()
	if dir == "" {
		return nil, "", errors.New("plan --check: no ../shared/models for the reference prompts; give --prompt TEXT")
	}
	path := filepath.Join(dir, "reference-public.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("plan --check: %w (or give --prompt TEXT)", err)
	}
	var ref struct {
		Prompts []struct {
			IDs []int32 `json:"prompt_ids"`
		} `json:"prompts"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		return nil, "", fmt.Errorf("plan --check: %s: %w", path, err)
	}
	var out []checkPrompt
	for _, p := range ref.Prompts {
		if len(out) == o.check.prompts {
			break
		}
		ids := p.IDs
		if o.check.promptLen > 0 && len(ids) > o.check.promptLen {
			ids = ids[len(ids)-o.check.promptLen:]
		}
		out = append(out, checkPrompt{ids: ids})
	}
	if len(out) == 0 {
		return nil, "", fmt.Errorf("plan --check: %s has no prompts", path)
	}
	return out, fmt.Sprintf("%d reference prompt(s) of %d tokens", len(out), o.check.promptLen), nil
}

// separated counts the pairs whose rounds put the backends on one side
// (a difference beyond the run-to-run spread) and, of those, the ones
// predicted in the measured order.
func separated(pairs []OrderPair) (sep, agree int) {
	for _, p := range pairs {
		if p.Separated {
			sep++
			if p.PredictedSameSide {
				agree++
			}
		}
	}
	return sep, agree
}
