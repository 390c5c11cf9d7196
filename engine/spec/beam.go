package spec

import (
	"math"
	"slices"
)

// Candidate is a possible tree node a model drafter considers: token Tok
// under proposal node Parent (-1: the context), with cumulative
// log-probability Score.
type Candidate struct {
	Parent int32
	Tok    int32
	Score  float64
}

// TopChildren appends to dst the b most likely entries of logits as children
// of parent, each scored parentScore plus its log-probability. Ties keep the
// lower index first. Model drafters grow beam trees with it: per depth, the
// Branch best of all candidates become nodes.
func TopChildren(dst []Candidate, logits []float32, parent int32, parentScore float64, b int) []Candidate {
	m := float32(math.Inf(-1))
	for _, v := range logits {
		m = max(m, v)
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v - m))
	}
	lse := float64(m) + math.Log(sum)
	top := make([]int32, 0, b+1) // indices, best first
	for i, v := range logits {
		if len(top) == b && v <= logits[top[b-1]] {
			continue
		}
		j := len(top)
		for j > 0 && v > logits[top[j-1]] {
			j--
		}
		top = slices.Insert(top, j, int32(i))
		if len(top) > b {
			top = top[:b]
		}
	}
	for _, t := range top {
		dst = append(dst, Candidate{Parent: parent, Tok: t, Score: parentScore + float64(logits[t]) - lse})
	}
	return dst
}
