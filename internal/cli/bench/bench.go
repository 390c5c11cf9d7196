// Package bench is `rigscope bench`: speculative decoding over a prompt
// set (drafters x k x chain/tree, acceptance and speedup over plain), and
// `bench --verdict`, the panel's break-even verdict against the measured
// speedup (verdict.go).
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"rigscope/engine"
	"rigscope/engine/stepstats"
	"rigscope/engine/tp"
	"rigscope/internal/cli"
	"rigscope/internal/fixtures"
)

// Command is `rigscope bench`.
var Command = cli.Command{
	Name:    "bench",
	Summary: "speculative decoding over a prompt set: drafters x k x chain/tree, acceptance and speedup over plain",
	Run:     runBench,
}

// specRow is one line of the bench table (and of --json): one drafter
// configuration summed over the prompt set.
type specRow struct {
	Drafter       string  `json:"drafter"`
	K             int     `json:"k"`
	Shape         string  `json:"shape"` // chain | treeB
	MeanAcceptLen float64 `json:"mean_accept_len"`
	AcceptHist    []int   `json:"accept_hist"`
	TokensPerS    float64 `json:"tokens_per_s"`
	Speedup       float64 `json:"speedup"`
	BreakEven     float64 `json:"break_even_accept_len"`
	DraftMs       float64 `json:"draft_ms"`
	VerifyMs      float64 `json:"verify_ms"`
	Drafts        int     `json:"drafts"`
}

// benchSet is what bench runs on: a target, a draft model, prompts.
type benchSet struct {
	model, draft string
	prompts      [][]int32
	source       string
}

// defaultBenchSet is the gocoder pair and its reference prompts when
// ../shared/models is there, else a synthetic pair and synthetic prompts.
func defaultBenchSet(nPrompts, promptLen int) (benchSet, error) {
	if dir := fixtures.ModelsDir(); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "reference-public.json")); err == nil {
			b, err := os.ReadFile(filepath.Join(dir, "reference-public.json"))
			if err != nil {
				return benchSet{}, fmt.Errorf("bench: %w", err)
			}
			var ref struct {
				Prompts []struct {
					IDs []int32 `json:"prompt_ids"`
				} `json:"prompts"`
			}
			if err := json.Unmarshal(b, &ref); err != nil {
				return benchSet{}, fmt.Errorf("bench: %s: %w", filepath.Join(dir, "reference-public.json"), err)
			}
			s := benchSet{model: filepath.Join(dir, "gocoder-14m-hf"), draft: filepath.Join(dir, "gocoder-draft-1m.F16.gguf"),
				source: "gocoder reference prompts (" + dir + ")"}
			for _, p := range ref.Prompts {
				s.prompts = append(s.prompts, p.IDs)
			}
			return s.trim(nPrompts, promptLen), nil
		}
	}
	// Synthetic prompts with repeats, so the n-gram drafter has something to
	// find; the draft model is a one-layer synthetic of another seed.
	rng := rand.New(rand.NewPCG(1, 2))
	s := benchSet{model: "synthetic:small", draft: "synthetic:small?seed=2&layers=1", source: "synthetic prompts"}
	for i := 0; i < max(nPrompts, 1); i++ {
		base := make([]int32, 16)
		for j := range base {
			base[j] = int32(3 + rng.IntN(4000))
		}
		p := []int32{1}
		for len(p) < promptLen {
			p = append(p, base[rng.IntN(8):]...)
		}
		s.prompts = append(s.prompts, p[:promptLen])
	}
	return s, nil
}

// trim keeps n prompts (0: all), each cut to its last promptLen tokens.
func (s benchSet) trim(n, promptLen int) benchSet {
	if n > 0 && n < len(s.prompts) {
		s.prompts = s.prompts[:n]
	}
	for i, p := range s.prompts {
		if promptLen > 0 && len(p) > promptLen {
			s.prompts[i] = p[len(p)-promptLen:]
		}
	}
	return s
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "target (default: gocoder-14m from ../shared/models, else synthetic:small)")
	draft := fs.String("draft", "", "draft model for the model drafter (default: gocoder-draft-1m, else a synthetic one)")
	drafters := fs.String("drafters", "ngram,model", "comma-separated drafters to run (ngram, model, eagle3)")
	eagle := fs.String("eagle", "", "EAGLE-3 head directory for the eagle3 drafter (default: gocoder-14m-eagle3 from ../shared/models)")
	kFlag := fs.String("k", "1-8", "draft lengths: FIRST-LAST or a comma list")
	treeFlag := fs.String("tree", "0,2", "tree branching per depth to run, comma list (0 = chain)")
	nPrompts := fs.Int("prompts", 0, "use the first N prompts (0: all)")
	promptLen := fs.Int("prompt-len", 128, "cut each prompt to its last N tokens (0: whole)")
	maxTokens := fs.Int("max-tokens", 64, "tokens to generate per prompt")
	ngramMin := fs.Int("ngram-min", engine.DefaultNgramMin, "ngram drafter: smallest n-gram")
	ngramMax := fs.Int("ngram-max", engine.DefaultNgramMax, "ngram drafter: largest n-gram")
	tpN := fs.Int("tp", 1, "tensor-parallel ranks")
	allreduce := fs.String("allreduce", "", "allreduce backend")
	var ncclSet tp.NCCLSettings
	cli.NCCLFlags(fs, &ncclSet)
	asJSON := fs.Bool("json", false, "print a JSON list of rows instead of the table")
	device := fs.String("device", "cpu", "where the target runs: "+strings.Join(engine.Devices(), ", "))
	var gpus []int
	cli.GPUsFlag(fs, &gpus)
	metricsAddr := cli.MetricsAddrFlag(fs)
	verdict := fs.Bool("verdict", false, "check the break-even verdict: per drafter and k (default model,eagle3 at 2,4,6, chain), plain and speculative runs alternated; the panel's verdict against the measured speedup")
	rounds := fs.Int("rounds", 1, "with --verdict: passes over the prompt set")
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if *verdict {
		if !given["k"] {
			*kFlag = "2,4,6"
		}
		if !given["drafters"] {
			*drafters = "model,eagle3"
		}
		*treeFlag = "0"
	}
	ks, err := parseIntList(*kFlag)
	if err != nil {
		return fmt.Errorf("bench: --k: %w", err)
	}
	trees, err := parseIntList(*treeFlag)
	if err != nil {
		return fmt.Errorf("bench: --tree: %w", err)
	}
	switch {
	case *maxTokens < 1 || *maxTokens > 1<<24:
		return fmt.Errorf("bench: --max-tokens %d must be 1..%d", *maxTokens, 1<<24)
	case *nPrompts < 0 || *promptLen < 0:
		return fmt.Errorf("bench: --prompts %d / --prompt-len %d: give 0 (all) or more", *nPrompts, *promptLen)
	}
	if err := engine.CheckRunConfig(engine.RunConfig{PromptIDs: []int32{0}, MaxTokens: *maxTokens, TP: *tpN, AllReduce: *allreduce, NCCL: ncclSet}); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	for _, k := range ks {
		if k < 1 {
			return fmt.Errorf("bench: --k %d must be at least 1", k)
		}
		for _, tree := range trees {
			if _, err := engine.NormalizeDrafter(engine.DrafterConfig{Kind: "ngram", K: k, Tree: tree}); err != nil {
				return fmt.Errorf("bench: --k %d --tree %d: %w", k, tree, err)
			}
		}
	}
	set, err := defaultBenchSet(*nPrompts, *promptLen)
	if err != nil {
		return err
	}
	if *model != "" {
		set.model = *model
	}
	if *draft != "" {
		set.draft = *draft
	}
	longest := 0
	for _, p := range set.prompts {
		longest = max(longest, len(p))
	}
	obs, stopMetrics, err := cli.StartMetrics(ctx, *metricsAddr, stderr)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer func() { err = errors.Join(err, stopMetrics()) }()
	opts := engine.Options{CtxLen: longest + *maxTokens + 8*16 + 2, Device: *device, GPUs: gpus, Observer: obs}
	base := engine.RunConfig{MaxTokens: *maxTokens, TP: *tpN, AllReduce: *allreduce, NCCL: ncclSet}
	drafterConfig := func(name string, k, tree int) engine.DrafterConfig {
		dc := engine.DrafterConfig{Kind: name, K: k, Tree: tree, NgramMin: *ngramMin, NgramMax: *ngramMax}
		switch name {
		case "model":
			dc.Path = set.draft
		case "eagle3":
			dc.Path = *eagle
			if dc.Path == "" {
				dc.Path = defaultEagleHead()
			}
		}
		return dc
	}
	if *verdict {
		var dcs []engine.DrafterConfig
		for _, name := range strings.Split(*drafters, ",") {
			for _, k := range ks {
				dcs = append(dcs, drafterConfig(strings.TrimSpace(name), k, 0))
			}
		}
		fmt.Fprintf(stderr, "bench --verdict: target %s, %d prompts (%s) x %d rounds, %d tokens each, greedy; plain and speculative runs alternated\n",
			set.model, len(set.prompts), set.source, *rounds, *maxTokens)
		rows, err := benchVerdict(ctx, set, opts, base, dcs, *rounds, stderr)
		if err != nil {
			return err
		}
		return printVerdicts(stdout, rows, *asJSON)
	}
	eng, err := engine.Open(ctx, set.model, opts)
	if err != nil {
		return fmt.Errorf("bench: --max-tokens %d after prompts of up to %d tokens: %w", *maxTokens, longest, err)
	}
	defer eng.Close()
	defer eng.CloseDrafters()
	fmt.Fprintf(stderr, "bench: target %s, draft %s, %d prompts (%s), %d tokens each, greedy\n", set.model, set.draft, len(set.prompts), set.source, *maxTokens)

	plain, plainCounts, err := benchConfig(ctx, eng, base, set.prompts)
	if err != nil {
		return err
	}
	plain.Drafter, plain.Shape, plain.Speedup = "none", "-", 1
	rows := []specRow{plain}
	for _, name := range strings.Split(*drafters, ",") {
		name = strings.TrimSpace(name)
		for _, tree := range trees {
			for _, k := range ks {
				cfg := base
				cfg.Drafter = drafterConfig(name, k, tree)
				r, c, err := benchConfig(ctx, eng, cfg, set.prompts)
				if err != nil {
					return err
				}
				// The plain runs of the same prompts are the baseline.
				c.Base, c.Source = plainCounts.Run.Y, stepstats.BaselineSession
				r.BreakEven = stepstats.Judge(c, true).BreakEven
				r.Drafter, r.K, r.Shape = name, k, "chain"
				if tree > 0 {
					r.Shape = fmt.Sprintf("tree%d", tree)
				}
				if plain.TokensPerS > 0 {
					r.Speedup = r.TokensPerS / plain.TokensPerS
				}
				rows = append(rows, r)
				if !*asJSON {
					fmt.Fprintf(stderr, "  %s k=%d %s: %.2f accepted/step, %.1f tok/s\n", name, k, r.Shape, r.MeanAcceptLen, r.TokensPerS)
				}
			}
		}
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "drafter\tk\tshape\tmean acc len\tbreak-even\taccept hist (0..k)\ttok/s\tspeedup\t")
	for _, r := range rows {
		hist := "-"
		if r.AcceptHist != nil {
			hist = strings.Trim(fmt.Sprint(r.AcceptHist), "[]")
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.2f\t%.2f\t%s\t%.1f\t%.2fx\t\n", r.Drafter, r.K, r.Shape, r.MeanAcceptLen, r.BreakEven, hist, r.TokensPerS, r.Speedup)
	}
	return tw.Flush()
}

// benchConfig runs cfg over every prompt and pools the runs: tokens/s is
// all decoded tokens over all decode time; the acceptance figures are
// stepstats' over every step of the set (returned too, for the break-even).
func benchConfig(ctx context.Context, eng *engine.Engine, cfg engine.RunConfig, prompts [][]int32) (specRow, stepstats.Counts, error) {
	var r specRow
	var rate decodeRate
	pooled := stepstats.NewCounts(0)
	if cfg.Drafter.Kind != "" && cfg.Drafter.Kind != "none" {
		pooled = stepstats.NewCounts(cfg.Drafter.K)
	}
	for _, p := range prompts {
		cfg.PromptIDs = p
		st, err := eng.Run(ctx, cfg, func(ev engine.Event) {
			if ev.Kind == engine.EventStep {
				pooled.Add(ev.Step)
			}
		})
		if err != nil {
			return r, pooled, fmt.Errorf("bench: %s k=%d: %w", cfg.Drafter.Kind, cfg.Drafter.K, err)
		}
		rate.add(st)
	}
	r.TokensPerS = rate.tokS()
	r.Drafts = pooled.Drafts
	r.DraftMs, r.VerifyMs = float64(pooled.Draft)/1e6, float64(pooled.Verify)/1e6
	if pooled.K > 0 {
		r.AcceptHist = pooled.Hist
		r.MeanAcceptLen = pooled.MeanAcceptLen()
	}
	return r, pooled, nil
}

// parseIntList parses "1-8" or "1,2,4".
func parseIntList(s string) ([]int, error) {
	if a, b, ok := strings.Cut(s, "-"); ok {
		lo, err1 := strconv.Atoi(strings.TrimSpace(a))
		hi, err2 := strconv.Atoi(strings.TrimSpace(b))
		if err1 != nil || err2 != nil || lo > hi {
			return nil, fmt.Errorf("%q is not a range FIRST-LAST", s)
		}
		var out []int
		for v := lo; v <= hi; v++ {
			out = append(out, v)
		}
		return out, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// defaultEagleHead is the fixture head trained for gocoder-14m, or "" when
// ../shared/models is absent (the run then asks for --eagle).
func defaultEagleHead() string {
	d := fixtures.ModelsDir()
	if d == "" {
		return ""
	}
	return filepath.Join(d, "gocoder-14m-eagle3")
}
