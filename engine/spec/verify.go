package spec

import (
	"fmt"

	"rigscope/engine/sample"
)

// verifier decides which drafted tokens the target accepts, given the
// target's logits for the verification batch: row 0 is the distribution
// after the context, row i+1 the one after proposal node i.
type verifier struct {
	smp   *sample.Sampler
	vocab int
	p, r  []float32 // (vocab) scratch: target distribution, residual
	// residual writes the distribution to sample from after rejecting
	// token x drawn from q (nil q: a point mass at x). Tests swap it.
	residual func(r, p, q []float32, x int32)
}

func newVerifier(smp *sample.Sampler, vocab int) *verifier {
	return &verifier{smp: smp, vocab: vocab, p: make([]float32, vocab), r: make([]float32, vocab), residual: residualMaxPQ}
}

// residualMaxPQ writes norm(max(p - q, 0)) into r; a nil q is a point mass
// at x. If the mass is zero (p = q up to rounding) it falls back to p.
func residualMaxPQ(r, p, q []float32, x int32) {
	var sum float64
	for i := range r {
		qi := float32(0)
		if q != nil {
			qi = q[i]
		} else if int32(i) == x {
			qi = 1
		}
		r[i] = max(p[i]-qi, 0)
		sum += float64(r[i])
	}
	if sum <= 0 {
		copy(r, p)
		return
	}
	for i := range r {
		r[i] = float32(float64(r[i]) / sum)
	}
}

func (v *verifier) row(logits []float32, i int) []float32 {
	return logits[i*v.vocab : (i+1)*v.vocab]
}

// chainGreedy verifies a chain proposal at temperature 0 from the target's
// argmax of each verification row (ids[0] after the context, ids[i+1]
// after node i): it returns how many drafted tokens match and the target's
// own next token.
func chainGreedy(ids []int32, prop Proposal) (int, int32) {
	for i, x := range prop.Tokens {
		if ids[i] != x {
			return i, ids[i]
		}
	}
	return len(prop.Tokens), ids[len(prop.Tokens)]
}

// treeGreedy walks a tree proposal at temperature 0: from the context, it
// follows the child whose token is the target's argmax, and returns the
// accepted path (proposal indices, root first) and the target's own next
// token.
func treeGreedy(ids []int32, prop Proposal, children [][]int) ([]int, int32) {
	var path []int
	cur := -1 // the context; row cur+1 holds the argmax after it
	for {
		a, next := ids[cur+1], -1
		for _, c := range children[cur+1] {
			if prop.Tokens[c] == a {
				next = c
				break
			}
		}
		if next < 0 {
			return path, a
		}
		path, cur = append(path, next), next
	}
}

// chain verifies a chain proposal by rejection sampling (temperature > 0;
// chainGreedy is temperature 0): it returns how many drafted tokens were
// accepted and the target's own next token (the correction at the first
// rejection, or the bonus token when all were accepted).
func (v *verifier) chain(logits []float32, prop Proposal) (int, int32) {
	k := len(prop.Tokens)
	for i, x := range prop.Tokens {
		v.smp.Probs(v.p, v.row(logits, i))
		var q []float32
		qx := float32(1)
		if prop.Probs != nil {
			q = prop.Probs[i]
			qx = q[x]
		}
		// Accept with probability min(1, p(x)/q(x)).
		if u := v.smp.Float(); qx > 0 && u*qx < v.p[x] {
			continue
		}
		v.residual(v.r, v.p, q, x)
		return i, v.smp.Draw(v.r)
	}
	v.smp.Probs(v.p, v.row(logits, k))
	return k, v.smp.Draw(v.p)
}

// tree verifies a tree proposal by sampling (temperature > 0; treeGreedy
// is temperature 0): it returns the accepted path (proposal
// indices, root first) and the target's own next token.
func (v *verifier) tree(logits []float32, prop Proposal, children [][]int) ([]int, int32) {
	var path []int
	cur := -1 // the context; row cur+1 holds the distribution after it
	for {
		kids := children[cur+1]
		v.smp.Probs(v.p, v.row(logits, cur+1))
		next := -1
		for _, c := range kids {
			x := prop.Tokens[c]
			// Point mass at x: accept with probability p(x); else drop x
			// from p and renormalize (the residual of a point mass).
			if v.smp.Float() < v.p[x] {
				next = c
				break
			}
			v.residual(v.r, v.p, nil, x)
			v.p, v.r = v.r, v.p
		}
		if next < 0 {
			return path, v.smp.Draw(v.p)
		}
		path, cur = append(path, next), next
	}
}

// checkProposal verifies that a drafter's proposal is well formed: at most
// req.MaxNodes nodes, parents in topological order, depth at most req.K,
// tokens inside the vocabulary, probabilities (chains only) per token. It
// returns, for a tree, children per node (index 0: the context's) and each
// node's depth (1 for the first drafted position).
func checkProposal(name string, p Proposal, req Request, vocab int) (children [][]int, depth []int32, err error) {
	n := len(p.Tokens)
	if n > req.MaxNodes() {
		return nil, nil, fmt.Errorf("drafter %s: proposed %d tokens, the request allows %d", name, n, req.MaxNodes())
	}
	for i, x := range p.Tokens {
		if x < 0 || int(x) >= vocab {
			return nil, nil, fmt.Errorf("drafter %s: token %d at node %d is outside the target vocabulary of %d", name, x, i, vocab)
		}
	}
	if p.Probs != nil && len(p.Probs) != n {
		return nil, nil, fmt.Errorf("drafter %s: %d probability rows for %d tokens", name, len(p.Probs), n)
	}
	for i, q := range p.Probs {
		if len(q) != vocab {
			return nil, nil, fmt.Errorf("drafter %s: probability row %d has %d entries, the target vocabulary %d", name, i, len(q), vocab)
		}
	}
	depth = make([]int32, n)
	if p.Parent == nil {
		if n > req.K {
			return nil, nil, fmt.Errorf("drafter %s: chain of %d tokens, the request allows %d", name, n, req.K)
		}
		for i := range depth {
			depth[i] = int32(i + 1)
		}
		return nil, depth, nil
	}
	if len(p.Parent) != n {
		return nil, nil, fmt.Errorf("drafter %s: %d parents for %d tokens", name, len(p.Parent), n)
	}
	children = make([][]int, n+1)
	for i, par := range p.Parent {
		if par < -1 || par >= int32(i) {
			return nil, nil, fmt.Errorf("drafter %s: parent %d of node %d must be in [-1, %d)", name, par, i, i)
		}
		depth[i] = 1
		if par >= 0 {
			depth[i] = depth[par] + 1
		}
		if depth[i] > int32(req.K) {
			return nil, nil, fmt.Errorf("drafter %s: node %d at depth %d, the request allows %d", name, i, depth[i], req.K)
		}
		children[par+1] = append(children[par+1], i)
	}
	return children, depth, nil
}
