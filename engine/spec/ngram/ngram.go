// Package ngram is prompt-lookup drafting: find the most recent earlier
// occurrence of the context's last n tokens (n from Max down to Min) and
// propose the tokens that followed it. No model, no probabilities: every
// drafted token is a point mass. For a tree it collects several matches
// (most recent first, longer n first) and merges their continuations into a
// trie of at most Branch nodes per depth.
package ngram

import (
	"context"
	"fmt"
	"slices"

	"rigscope/engine/spec"
)

// MaxN bounds the n-gram size.
const MaxN = 64

// Drafter is a prompt-lookup drafter. It keeps no state.
type Drafter struct {
	Min, Max int
}

// New returns a drafter matching n-grams of min..max tokens.
func New(min, max int) (*Drafter, error) {
	switch {
	case min < 1:
		return nil, fmt.Errorf("ngram: minimum n-gram size %d must be at least 1", min)
	case max < min:
		return nil, fmt.Errorf("ngram: maximum n-gram size %d is below the minimum %d", max, min)
	case max > MaxN:
		return nil, fmt.Errorf("ngram: maximum n-gram size %d is above %d", max, MaxN)
	}
	return &Drafter{Min: min, Max: max}, nil
}

func (d *Drafter) Name() string { return "ngram" }
func (d *Drafter) Accept([]int) {}
func (d *Drafter) Reset()       {}

// Propose looks the context's suffix up in the context itself.
func (d *Drafter) Propose(ctx context.Context, seq []int32, req spec.Request) (spec.Proposal, error) {
	if req.Branch == 0 {
		for n := d.Max; n >= d.Min; n-- {
			if i := lastMatch(seq, n, len(seq)-n-1); i >= 0 {
				return spec.Proposal{Tokens: slices.Clone(seq[i+n : min(i+n+req.K, len(seq))])}, nil
			}
		}
		return spec.Proposal{}, nil
	}
	// Walk matches from the most recent back, for n from Max down to Min,
	// until Branch continuations have added nodes or none are left.
	t := trie{perDepth: make([]int, req.K+1), branch: req.Branch}
	added := 0
	for n := d.Max; n >= d.Min && added < req.Branch; n-- {
		for i := lastMatch(seq, n, len(seq)-n-1); i >= 0 && added < req.Branch; i = lastMatch(seq, n, i-1) {
			if t.insert(seq[i+n : min(i+n+req.K, len(seq))]) {
				added++
			}
		}
	}
	return t.proposal(), nil
}

// lastMatch returns the largest start i <= from at which seq[i:i+n] equals
// seq's last n tokens, or -1. from <= len(seq)-n-1 keeps a continuation.
func lastMatch(seq []int32, n, from int) int {
	if n < 1 || len(seq) < n+1 {
		return -1
	}
	suffix := seq[len(seq)-n:]
	for i := min(from, len(seq)-n-1); i >= 0; i-- {
		if seq[i] == suffix[0] && slices.Equal(seq[i:i+n], suffix) {
			return i
		}
	}
	return -1
}

// trie merges continuations; node i's parent is parent[i].
type trie struct {
	tokens   []int32
	parent   []int32
	perDepth []int // nodes at each depth (index = depth)
	branch   int
}

// insert adds the continuation's path, stopping where a depth is full; it
// reports whether any node was added.
func (t *trie) insert(cont []int32) bool {
	par := int32(-1)
	added := false
	for depth, tok := range cont {
		child := int32(-1)
		for i := range t.tokens {
			if t.parent[i] == par && t.tokens[i] == tok {
				child = int32(i)
				break
			}
		}
		if child < 0 {
			if t.perDepth[depth+1] >= t.branch {
				return added
			}
			t.tokens = append(t.tokens, tok)
			t.parent = append(t.parent, par)
			t.perDepth[depth+1]++
			child = int32(len(t.tokens) - 1)
			added = true
		}
		par = child
	}
	return added
}

// proposal orders the trie topologically (it already is: parents are added
// before children).
func (t *trie) proposal() spec.Proposal {
	if len(t.tokens) == 0 {
		return spec.Proposal{}
	}
	return spec.Proposal{Tokens: t.tokens, Parent: t.parent}
}
