package engine

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/spec"
	"rigscope/engine/spec/draftmodel"
	"rigscope/engine/spec/eagle3"
	"rigscope/engine/spec/ngram"
	"rigscope/engine/tensor/cpu"
	"rigscope/engine/tokenizer"
	"rigscope/internal/modelpath"
)

// Drafter defaults (DrafterConfig fields left 0).
const (
	DefaultK        = 4
	DefaultNgramMin = 1
	DefaultNgramMax = 3
)

// drafterCache keeps draft models loaded between runs (by path). The zero
// value is ready.
type drafterCache struct {
	mu     sync.Mutex
	models map[string]*loadedDraft
	heads  map[string]*eagle3.Drafter // EAGLE-3 heads by directory
}

// loadedDraft is an opened draft model file and the drafter over it.
type loadedDraft struct {
	src loader.Source
	d   *draftmodel.Drafter
}

// DrafterKinds are the drafter names a run accepts.
var DrafterKinds = []string{"none", "ngram", "model", "eagle3"}

// NormalizeDrafter fills defaults and checks a drafter config: kind none,
// ngram, model or eagle3 (--draft implies model, or eagle3 for an EAGLE-3
// head directory), k in 1..16, tree branching 0..8, n-gram sizes of at
// least 1.
func NormalizeDrafter(dc DrafterConfig) (DrafterConfig, error) {
	if dc.Path != "" {
		if dc.Kind == "none" || dc.Kind == "ngram" {
			return dc, fmt.Errorf("drafter: a draft path (%s) is for the model or eagle3 drafter, not %s", dc.Path, dc.Kind)
		}
		if err := modelpath.Regular(dc.Path, "draft"); err != nil {
			return dc, fmt.Errorf("drafter: %w", err)
		}
	}
	// Out-of-range sizes are refused whatever the kind (0 = the default).
	if err := spec.CheckShape(cmp.Or(dc.K, DefaultK), dc.Tree); err != nil {
		return dc, fmt.Errorf("drafter: %w", err)
	}
	if dc.Kind == "" {
		dc.Kind = "none"
		if dc.Path != "" {
			dc.Kind = "model"
		}
	}
	if dc.Kind == "model" && dc.Path != "" && eagle3.IsHead(dc.Path) {
		dc.Kind = "eagle3"
	}
	switch dc.Kind {
	case "none":
		return DrafterConfig{Kind: "none"}, nil
	case "ngram":
		if dc.NgramMin == 0 && dc.NgramMax == 0 {
			dc.NgramMin, dc.NgramMax = DefaultNgramMin, DefaultNgramMax
		}
		if _, err := ngram.New(dc.NgramMin, dc.NgramMax); err != nil {
			return dc, fmt.Errorf("drafter: %w", err)
		}
	case "model":
		if dc.Path == "" {
			return dc, fmt.Errorf("drafter: model needs a draft model file (--draft PATH)")
		}
	case "eagle3":
		if dc.Path == "" {
			return dc, fmt.Errorf("drafter: eagle3 needs an EAGLE-3 head directory (--draft PATH)")
		}
		if _, err := eagle3.ReadConfig(dc.Path); err != nil {
			return dc, fmt.Errorf("drafter: %w", err)
		}
	default:
		return dc, fmt.Errorf("drafter: unknown kind %q (%s)", dc.Kind, strings.Join(DrafterKinds, ", "))
	}
	if dc.K == 0 {
		dc.K = DefaultK
	}
	return dc, nil
}

// drafter returns the drafter for a normalized config (nil for none). A
// draft model is loaded once per path and kept; its cache holds ctxLen
// positions plus a full proposal.
func (e *Engine) drafter(dc DrafterConfig) (spec.Drafter, error) {
	switch dc.Kind {
	case "none":
		return nil, nil
	case "ngram":
		return ngram.New(dc.NgramMin, dc.NgramMax)
	}
	c := &e.drafters
	c.mu.Lock()
	defer c.mu.Unlock()
	if dc.Kind == "eagle3" {
		return e.eagleHead(dc.Path)
	}
	if ld, ok := c.models[dc.Path]; ok {
		return ld.d, nil
	}
	src, err := loader.Open(dc.Path, loader.Options{})
	if err != nil {
		return nil, fmt.Errorf("draft model: %w", err)
	}
	if err := e.checkDraftVocab(dc.Path, src); err != nil {
		src.Close()
		return nil, err
	}
	t, err := e.draftTarget(src, e.opts.CtxLen+spec.MaxK*spec.MaxBranch)
	if err != nil {
		src.Close()
		return nil, fmt.Errorf("draft model %s: %w", dc.Path, err)
	}
	if c.models == nil {
		c.models = map[string]*loadedDraft{}
	}
	c.models[dc.Path] = &loadedDraft{src: src, d: draftmodel.New(t)}
	return c.models[dc.Path].d, nil
}

// draftTarget builds the draft model, unsharded, with a cache of slots
// positions, on the target's device: the device executes the same model
// code as for the target. On the CPU it runs on one thread: the draft
// model is small enough that fanning its matmuls out costs more than it
// saves, and it leaves the cores to the target.
func (e *Engine) draftTarget(src loader.Source, slots int) (spec.Target, error) {
	if e.opts.Device != "" && e.opts.Device != "cpu" {
		dev, err := lookupDevice(e.opts.Device)
		if err != nil {
			return nil, err
		}
		t, err := dev.Target(src, 1, e.opts.GPUs, slots)
		if err != nil {
			return nil, fmt.Errorf("on %s: %w", e.opts.Device, err)
		}
		return t, nil
	}
	if err := checkFits("draft model "+src.Meta()["path"], src.Config(), src.Meta()["dtype"], slots, 1, true); err != nil {
		return nil, err
	}
	w, err := model.LoadWeights(src, model.Shard{Rank: 0, Size: 1})
	if err != nil {
		return nil, err
	}
	return spec.NewRunnerTarget(model.NewRunner(w, slots, nil, cpu.NewPool(1))), nil
}

// checkDraftVocab refuses a draft model whose vocabulary differs from the
// target's: the same size and the same piece for every id.
func (e *Engine) checkDraftVocab(path string, src loader.Source) error {
	tv, dv := e.cfg.Vocab, src.Config().Vocab
	dtok, dErr := src.Tokenizer()
	return CompareVocab(tv, e.tok, dv, dtok, dErr, path)
}

// CompareVocab reports the first difference between the target's
// vocabulary (logit width tv, tokenizer ttok) and a drafter's. Without
// tokenizers on both sides only the sizes are compared.
func CompareVocab(tv int, ttok tokenizer.Tokenizer, dv int, dtok tokenizer.Tokenizer, dErr error, path string) error {
	if tv != dv {
		return fmt.Errorf("draft model %s: vocabulary of %d tokens, the target has %d; first differing token id %d", path, dv, tv, min(tv, dv))
	}
	switch {
	case ttok == nil && dtok == nil:
		return nil
	case ttok == nil:
		return fmt.Errorf("draft model %s: the target has no tokenizer to compare vocabularies with", path)
	case dtok == nil:
		return fmt.Errorf("draft model %s: no tokenizer to compare with the target's (%v)", path, dErr)
	}
	if a, b := ttok.VocabSize(), dtok.VocabSize(); a != b {
		return fmt.Errorf("draft model %s: tokenizer of %d pieces, the target's has %d; first differing token id %d", path, b, a, min(a, b))
	}
	for id := int32(0); int(id) < ttok.VocabSize(); id++ {
		if a, b := ttok.Piece(id), dtok.Piece(id); a != b {
			return fmt.Errorf("draft model %s: vocabulary differs from the target's at token id %d (%q, target %q)", path, id, b, a)
		}
	}
	return nil
}

// CloseDrafters releases the loaded draft models (Close should call it).
func (e *Engine) CloseDrafters() error {
	c := &e.drafters
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for p, ld := range c.models {
		if dt, ok := ld.d.Target().(io.Closer); ok { // a device target frees its memory
			if err := dt.Close(); err != nil && first == nil {
				first = fmt.Errorf("draft model %s: %w", p, err)
			}
		}
		if err := ld.src.Close(); err != nil && first == nil {
			first = fmt.Errorf("draft model %s: %w", p, err)
		}
		delete(c.models, p)
	}
	for p, d := range c.heads {
		if err := d.Close(); err != nil && first == nil {
			first = fmt.Errorf("eagle3 head %s on %s: %w", p, e.opts.Device, err)
		}
		if err := d.Head().Close(); err != nil && first == nil {
			first = fmt.Errorf("eagle3 head %s: %w", p, err)
		}
		delete(c.heads, p)
	}
	return first
}

// eagleHead loads (once per directory) an EAGLE-3 head for this target;
// c.mu is held. The head runs unsharded on the loop's goroutine: the
// residual stream it reads is replicated on every rank after each allreduce,
// so rank 0's copy is enough.
func (e *Engine) eagleHead(dir string) (spec.Drafter, error) {
	c := &e.drafters
	if d, ok := c.heads[dir]; ok {
		return d, nil
	}
	h, err := eagle3.Load(dir, e.src)
	if err != nil {
		return nil, fmt.Errorf("eagle3 head: %w", err)
	}
	d := eagle3.New(h, e.opts.CtxLen, cpu.NewPool(0))
	if err := e.headOnDevice(d); err != nil {
		h.Close()
		return nil, err
	}
	if c.heads == nil {
		c.heads = map[string]*eagle3.Drafter{}
	}
	c.heads[dir] = d
	return d, nil
}

// headOnDevice puts d's drafting on the target's device when the device
// runs EAGLE-3 heads: greedy chains, and trees and sampled chains where
// the runner implements them (eagle3.TreeRunner, SampledRunner; what it
// refuses runs on the CPU head and is counted, Drafter.Fallbacks).
func (e *Engine) headOnDevice(d *eagle3.Drafter) error {
	if e.opts.Device == "" || e.opts.Device == "cpu" {
		return nil
	}
	dev, err := lookupDevice(e.opts.Device)
	if err != nil || dev.Head == nil {
		return err
	}
	r, err := dev.Head(d.Head(), e.opts.CtxLen+spec.MaxK*spec.MaxBranch)
	if err != nil {
		return fmt.Errorf("eagle3 head %s on %s: %w", d.Head().Path, e.opts.Device, err)
	}
	d.SetDevice(r)
	return nil
}

// headFallbacks is an EAGLE-3 drafter's count of proposals its device
// runner refused and the CPU head drafted, by reason (nil for others).
func headFallbacks(d spec.Drafter) map[string]int {
	if h, ok := d.(*eagle3.Drafter); ok {
		return h.Fallbacks()
	}
	return nil
}

// fallbackWarnings says, one line per reason, how many proposals of a run
// fell back to the CPU head (after less before).
func fallbackWarnings(before, after map[string]int) []string {
	var out []string
	for _, why := range slices.Sorted(maps.Keys(after)) {
		if n := after[why] - before[why]; n > 0 {
			out = append(out, fmt.Sprintf("eagle3: %d proposals drafted on the CPU head, not the device's (%s)", n, why))
		}
	}
	return out
}
