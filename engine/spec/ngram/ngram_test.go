package ngram

import (
	"context"
	"slices"
	"testing"

	"rigscope/engine/spec"
)

func TestChainMatch(t *testing.T) {
	d, _ := New(1, 3)
	for _, tc := range []struct {
		seq  []int32
		k    int
		want []int32
	}{
		{[]int32{1, 2, 3, 4, 1, 2, 3}, 2, []int32{4, 1}},             // n=3 match at 0
		{[]int32{1, 2, 3, 9, 2, 3, 5, 7, 2, 3}, 3, []int32{5, 7, 2}}, // most recent n=2 match
		{[]int32{5, 5, 5}, 4, []int32{5}},                            // overlapping match
		{[]int32{1, 2, 3}, 4, nil},
	} {
		p, err := d.Propose(context.Background(), tc.seq, spec.Request{K: tc.k})
		if err != nil || !slices.Equal(p.Tokens, tc.want) {
			t.Errorf("Propose(%v, k=%d) = %v, %v; want %v", tc.seq, tc.k, p.Tokens, err, tc.want)
		}
	}
}

// FuzzPropose: every proposal is a well-formed chain or tree within the
// request's limits, made of tokens from the context.
func FuzzPropose(f *testing.F) {
	f.Add([]byte{1, 2, 3, 1, 2, 3, 1, 2}, uint8(4), uint8(2))
	f.Add([]byte{7}, uint8(1), uint8(0))
	f.Fuzz(func(t *testing.T, raw []byte, k, b uint8) {
		seq := make([]int32, len(raw))
		for i, c := range raw {
			seq[i] = int32(c % 8)
		}
		req := spec.Request{K: int(k%8) + 1, Branch: int(b % 4)}
		d, _ := New(1, 3)
		p, err := d.Propose(context.Background(), seq, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Tokens) > req.MaxNodes() || p.Parent != nil && len(p.Parent) != len(p.Tokens) {
			t.Fatalf("Propose(%v, %+v) = %+v: too many nodes or parents", seq, req, p)
		}
		depth := make([]int, len(p.Tokens))
		per := map[int]int{}
		for i := range p.Tokens {
			depth[i] = i + 1
			if p.Parent != nil {
				par := p.Parent[i]
				if par < -1 || par >= int32(i) {
					t.Fatalf("Propose(%v, %+v): parent %d of node %d", seq, req, par, i)
				}
				depth[i] = 1
				if par >= 0 {
					depth[i] = depth[par] + 1
				}
				per[depth[i]]++
				if per[depth[i]] > req.Branch {
					t.Fatalf("Propose(%v, %+v): %d nodes at depth %d", seq, req, per[depth[i]], depth[i])
				}
			}
			if depth[i] > req.K || !slices.Contains(seq, p.Tokens[i]) {
				t.Fatalf("Propose(%v, %+v): node %d at depth %d token %d", seq, req, i, depth[i], p.Tokens[i])
			}
		}
	})
}
