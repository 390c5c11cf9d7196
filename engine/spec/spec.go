// Package spec is speculative decoding: drafters propose tokens (a chain or
// a tree), the target verifies them in one forward pass, and the longest
// accepted prefix is kept. Generate is the decode loop for every drafter,
// including none (plain decoding).
//
// Verification is lossless. At temperature 0 the output equals plain greedy
// decoding token for token. At temperature > 0 a chain uses rejection
// sampling (accept a drafted token x with probability min(1, p(x)/q(x)); on
// rejection sample from norm(max(p-q, 0)); a drafter without probabilities
// is a point mass), and a tree walks each node's children as point masses
// (try child x with probability p(x); on rejection remove x from p and
// renormalize), which also samples exactly from p.
//
// Drafters keep their own state in sync with the sequence they are shown
// (the drafter model keeps the tokens its KV cache holds and rewinds to the
// longest common prefix with the next sequence), so a cancelled or failed
// step never leaves a drafter inconsistent: the next Propose repairs it.
//
// The draft model runs unsharded (TP=1) on the calling goroutine even when
// the target is tensor-parallel: it is small (its whole step costs less than
// one allreduce round of the target would add), and keeping it off the
// group means drafter swaps never touch the target's ranks or comms.
package spec

import (
	"context"
	"errors"
	"fmt"

	"rigscope/engine/model"
	"rigscope/engine/sample"
)

// Target is the model being sped up, as the loop sees it (all ranks of a
// tensor-parallel group behind one value).
type Target interface {
	// Forward appends the batch to the KV cache and returns logits,
	// (rows, vocab) with rows as b.Logits asks. The slice is reused by the
	// next call. On error the cache keeps its old length.
	Forward(ctx context.Context, b model.Batch) ([]float32, error)
	Len() int // cached positions
	Rewind(n int) error
	KeepPath(base int, path []int) error
	Vocab() int
	MaxLen() int
}

// IDTarget is a target that picks each logits row's greedy token itself
// (on its device, lowest index on ties as sample.Argmax), so a greedy step
// copies back token ids instead of (rows, vocab) logits. The loop uses it
// for every greedy forward; Forward stays the specification.
type IDTarget interface {
	Target
	// ForwardIDs is Forward followed by the argmax of each logits row.
	// The slice is reused by the next call.
	ForwardIDs(ctx context.Context, b model.Batch) ([]int32, error)
}

// GreedyIDs runs b on t and returns the argmax of each logits row it asks
// for: on the target's device when t is an IDTarget, else over Forward's
// logits on the host.
func GreedyIDs(ctx context.Context, t Target, b model.Batch) ([]int32, error) {
	if it, ok := t.(IDTarget); ok {
		return it.ForwardIDs(ctx, b)
	}
	logits, err := t.Forward(ctx, b)
	if err != nil {
		return nil, err
	}
	v := t.Vocab()
	ids := make([]int32, len(logits)/v)
	for i := range ids {
		ids[i] = sample.Argmax(logits[i*v : (i+1)*v])
	}
	return ids, nil
}

// AheadTarget is an IDTarget that can enqueue a greedy one-token step
// before the host has read the previous one (a GPU: the step's input token
// is the previous step's argmax, which stays on the device). Plain greedy
// decoding then keeps the device busy while the host reads, emits and
// streams each token. The loop uses it for plain greedy steps when Ahead
// says so; ForwardIDs stays the specification, and the tokens are the same.
type AheadTarget interface {
	IDTarget
	// Ahead reports whether EnqueueGreedy can run with the target as it is
	// now (its capture set, sampler, ranks); false: the loop calls
	// ForwardIDs.
	Ahead() bool
	// EnqueueGreedy enqueues a greedy step of one token at position Len()
	// and counts it in Len at once. Its token is next, or with fed the
	// argmax of the step enqueued just before it (still pending). It does
	// not wait. At most two steps are pending.
	EnqueueGreedy(ctx context.Context, next int32, fed bool) error
	// WaitGreedy waits for the oldest pending step and returns its argmax;
	// a FeatureTarget's Captured then holds that step's features. Rewind
	// (and any forward) first waits for pending steps and drops their ids.
	WaitGreedy(ctx context.Context) (int32, error)
}

// SampleTarget is a target that samples each logits row's token itself (on
// its device), so a sampled step copies back token ids instead of (rows,
// vocab) logits. The host stays the specification: the loop draws each
// row's uniform number from its own seeded generator (sample.Sampler's
// Uniform, the number Draw would draw) and the device must pick what
// sample.Sampler.SampleU picks with params p over that row's logits and
// that number (temperature, top-k, top-p, inverse CDF in index order).
//
// The loop uses it only for plain sampled steps (one row, the sampler's
// own draw). Speculative verification at temperature > 0 stays on the
// host: rejection sampling compares the target's probabilities p(x) with
// the drafter's q(x) and samples the residual norm(max(p-q, 0)), which
// need the target's full distribution, so those steps call Forward.
type SampleTarget interface {
	Target
	// SampleIDs is Forward followed by, for each logits row i, the token
	// sample.Sampler{P: p}.SampleU(row i, u[i]) picks; len(u) must equal
	// the rows b.Logits asks for. p must not be greedy (ForwardIDs is).
	// The slice is reused by the next call.
	SampleIDs(ctx context.Context, b model.Batch, p sample.Params, u []float64) ([]int32, error)
}

// SampledIDs runs b on t and samples each logits row it asks for with
// params p and row i's uniform number u[i]: on the target's device when t
// is a SampleTarget, else over Forward's logits on the host (SampleU).
func SampledIDs(ctx context.Context, t Target, b model.Batch, p sample.Params, u []float64) ([]int32, error) {
	if p.Greedy() {
		return nil, errors.New("spec: sampled ids asked with greedy params (use GreedyIDs)")
	}
	if st, ok := t.(SampleTarget); ok {
		return st.SampleIDs(ctx, b, p, u)
	}
	logits, err := t.Forward(ctx, b)
	if err != nil {
		return nil, err
	}
	v := t.Vocab()
	rows := len(logits) / v
	if rows != len(u) {
		return nil, fmt.Errorf("spec: %d logits rows and %d uniform numbers", rows, len(u))
	}
	s, scratch := &sample.Sampler{P: p}, make([]float32, v)
	ids := make([]int32, rows)
	for i := range ids {
		ids[i] = s.SampleU(logits[i*v:(i+1)*v], scratch, u[i])
	}
	return ids, nil
}

// FeatureTarget is a target that can hand hidden states to a drafter
// (model.Runner's CaptureLayers/Captured on rank 0: the residual stream is
// replicated across tensor-parallel ranks after each allreduce).
type FeatureTarget interface {
	Target
	// SetCapture chooses the layers whose output residual streams later
	// forwards copy out (nil: none).
	SetCapture(layers []int)
	// Captured returns, per captured layer, (T, dim) features of the last
	// forward's T tokens. Valid until the next forward.
	Captured() [][]float32
}

// PendingChain is a greedy chain a drafter enqueued on the target's device
// and did not read back: the target's verify reads its tokens there
// (ChainVerifier), so drafting and verifying a step synchronize with the
// device once.
type PendingChain interface {
	Len() int // tokens drafted
}

// DeviceChainDrafter is a drafter that can leave a greedy chain on the
// target's device (an EAGLE-3 head running there).
type DeviceChainDrafter interface {
	Drafter
	// ProposeOnDevice enqueues the greedy chain Propose would draft for
	// seq and req (a chain request) and returns it unread; nil with no
	// error: not this step (the loop calls Propose).
	ProposeOnDevice(ctx context.Context, seq []int32, req Request) (PendingChain, error)
}

// ChainVerifier is a target that verifies a PendingChain on its device.
type ChainVerifier interface {
	Target
	// VerifyChain runs the batch (next, the chain's tokens) with every
	// logits row, as ForwardIDs would, and returns each row's argmax
	// (Len()+1) and the chain's tokens (Len()). The slices are reused by
	// the next call.
	VerifyChain(ctx context.Context, next int32, p PendingChain) (ids, drafts []int32, err error)
}

// Proposal is what a drafter offers: a chain (Parent nil) or a tree in
// topological order (Parent[i] < i; -1 attaches to the context).
type Proposal struct {
	Tokens []int32
	Parent []int32
	// Probs[i] is the drafter's distribution q that Tokens[i] was sampled
	// from, over the target vocabulary; nil for deterministic drafts (a
	// point mass). Only chains use it: tree children are chosen by rank, so
	// the tree walk treats them as point masses.
	Probs [][]float32
}

// Request says what the loop wants proposed.
type Request struct {
	K      int // chain length, or tree depth
	Branch int // 0: chain; B > 0: a tree of at most B nodes per depth
	// Sampler is how a chain drafter with probabilities picks tokens: nil
	// or greedy means argmax; otherwise sample from q (the sampler's
	// transform of the drafter's logits) and report q in Proposal.Probs.
	// It is the drafter's own sampler (its own random stream).
	Sampler *sample.Sampler
}

// MaxNodes is the largest proposal a request allows.
func (r Request) MaxNodes() int { return r.K * max(r.Branch, 1) }

// Drafter proposes tokens that continue a sequence.
type Drafter interface {
	Name() string
	// Propose offers a chain of up to K tokens, or a tree of depth up to K
	// with at most Branch nodes per depth, after seq, the whole context
	// (prompt and generated tokens; the last one is not yet verified by the
	// target's cache). An empty proposal means "nothing to offer" (the loop
	// then takes a plain step).
	Propose(ctx context.Context, seq []int32, req Request) (Proposal, error)
	// Accept says which proposal nodes the target kept (indices root first,
	// then the target added one token of its own).
	Accept(path []int)
	// Reset forgets all cached state.
	Reset()
}

// FeatureDrafter is a drafter that reads the target's hidden states (an
// EAGLE-3 head). The loop turns capture on for FeatureLayers and, after
// each target forward, passes Observe the features of the positions the
// target kept, in order, so the drafter's inputs line up with the cache.
type FeatureDrafter interface {
	Drafter
	FeatureLayers() []int
	// Observe: tokens kept at positions pos, pos+1, ...; feats[l] is
	// (len(tokens), dim) for FeatureLayers()[l]. The slices are reused.
	Observe(pos int, tokens []int32, feats [][]float32)
}

// Limits on a request.
const (
	MaxK      = 16
	MaxBranch = 8
)
