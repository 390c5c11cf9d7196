package tp

import "context"

// The exact allreduce algorithms. Each runs on every rank of the group at
// once; "rank r reads peer j's buffer" stands for a transfer over the
// interconnect, and every such read happens between two barriers in which
// peer j does not write that part of its buffer.

// cacheAlign is the chunk alignment in floats (one 64-byte cache line).
const cacheAlign = 16

func mod(a, n int) int { return ((a % n) + n) % n }

// add does dst[i] += src[i].
func add(dst, src []float32) {
	src = src[:len(dst)]
	i := 0
	for ; i+4 <= len(dst); i += 4 {
		d := dst[i : i+4 : i+4]
		s := src[i : i+4 : i+4]
		d[0] += s[0]
		d[1] += s[1]
		d[2] += s[2]
		d[3] += s[3]
	}
	for ; i < len(dst); i++ {
		dst[i] += src[i]
	}
}

// grow returns buf with length n, reallocating only when it is too small.
func grow[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n, n+n/8)
	}
	return buf[:n]
}

// ringAllReduce: n-1 reduce-scatter steps then n-1 all-gather steps. At
// reduce-scatter step s rank r adds chunk (r-1-s) of rank r-1 into its own;
// after them rank r holds the full sum of chunk r+1. At all-gather step s it
// copies chunk (r-s) from rank r-1. Per rank: 2(n-1)/n of the message each
// way. Works in place on the callers' buffers.
func ringAllReduce(c *rankComm, ctx context.Context, x []float32) error {
	g, r, n, L := c.g, c.rank, c.g.n, len(x)
	w := &g.wire[r]
	w.x, w.n[c.calls&1] = x, L
	if err := c.publishWait(ctx); err != nil {
		return err
	}
	prev := g.wire[mod(r-1, n)].x
	var sent, recv int
	for s := range n - 1 {
		lo, hi := chunk(L, n, mod(r-1-s, n), cacheAlign)
		add(x[lo:hi], prev[lo:hi])
		recv += hi - lo
		lo, hi = chunk(L, n, mod(r-s, n), cacheAlign) // rank r+1 reads this one
		sent += hi - lo
		if err := g.bar.wait(ctx); err != nil {
			return err
		}
	}
	for s := range n - 1 {
		lo, hi := chunk(L, n, mod(r-s, n), cacheAlign)
		copy(x[lo:hi], prev[lo:hi])
		recv += hi - lo
		lo, hi = chunk(L, n, mod(r+1-s, n), cacheAlign)
		sent += hi - lo
		if err := g.bar.wait(ctx); err != nil { // also: peers are done with x
			return err
		}
	}
	g.bytes.Add(r, int64(sent)*4, int64(recv)*4)
	return nil
}

// treeAllReduce: a binary tree. Reduce: at stride s (1, 2, 4, ...) rank r
// with r%2s == 0 adds rank r+s's buffer. Broadcast: strides descending, rank
// r with r%2s == s copies rank r-s's buffer. 2*ceil(log2 n) steps of the
// whole message; rank 0 moves the most. Works in place.
func treeAllReduce(c *rankComm, ctx context.Context, x []float32) error {
	g, r, n, L := c.g, c.rank, c.g.n, len(x)
	w := &g.wire[r]
	w.x, w.n[c.calls&1] = x, L
	if err := c.publishWait(ctx); err != nil {
		return err
	}
	var sent, recv int
	top := 1
	for s := 1; s < n; s *= 2 {
		switch {
		case r%(2*s) == 0 && r+s < n:
			add(x, g.wire[r+s].x)
			recv += L
		case r%(2*s) == s:
			sent += L
		}
		top = s
		if err := g.bar.wait(ctx); err != nil {
			return err
		}
	}
	for s := top; s >= 1; s /= 2 {
		switch {
		case r%(2*s) == s:
			copy(x, g.wire[r-s].x)
			recv += L
		case r%(2*s) == 0 && r+s < n:
			sent += L
		}
		if err := g.bar.wait(ctx); err != nil {
			return err
		}
	}
	g.bytes.Add(r, int64(sent)*4, int64(recv)*4)
	return nil
}

// publishCopy copies x into this rank's published scratch of the call's
// parity p (double-buffered, so the next call needs no second barrier) and
// waits until every rank has published; it returns p and the rank's wire.
func (c *rankComm) publishCopy(ctx context.Context, x []float32) (int, *wire, error) {
	p := int(c.calls & 1)
	w := &c.g.wire[c.rank]
	w.scratch[p] = grow(w.scratch[p], len(x))
	copy(w.scratch[p], x)
	w.n[p] = len(x)
	return p, w, c.publishWait(ctx)
}

// oneshotAllReduce: each rank copies its input to a published scratch
// buffer (double-buffered by call parity, so the next call needs no second
// barrier), then every rank sums all of them in rank order 0..n-1 (so every
// rank gets the same bits). One barrier; (n-1) messages each way per rank.
func oneshotAllReduce(c *rankComm, ctx context.Context, x []float32) error {
	g, r, n, L := c.g, c.rank, c.g.n, len(x)
	p, _, err := c.publishCopy(ctx, x)
	if err != nil {
		return err
	}
	copy(x, g.wire[0].scratch[p][:L])
	for j := 1; j < n; j++ {
		add(x, g.wire[j].scratch[p][:L])
	}
	b := int64(n-1) * int64(L) * 4
	g.bytes.Add(r, b, b)
	return nil
}

// twoshotAllReduce: inputs copied to published scratch (double-buffered);
// rank r reduces chunk r of every rank's scratch into its own scratch, then
// every rank gathers chunk j from rank j. Two barriers; 2(n-1)/n of the
// message each way per rank, like ring, in 2 steps instead of 2(n-1).
func twoshotAllReduce(c *rankComm, ctx context.Context, x []float32) error {
	g, r, n, L := c.g, c.rank, c.g.n, len(x)
	p, w, err := c.publishCopy(ctx, x)
	if err != nil {
		return err
	}
	lo, hi := chunk(L, n, r, cacheAlign)
	mine := w.scratch[p][lo:hi]
	for j := range n {
		if j != r {
			add(mine, g.wire[j].scratch[p][lo:hi])
		}
	}
	own := hi - lo
	if err := g.bar.wait(ctx); err != nil {
		return err
	}
	for j := range n {
		lo, hi := chunk(L, n, j, cacheAlign)
		copy(x[lo:hi], g.wire[j].scratch[p][lo:hi])
	}
	sent := (L - own) + (n-1)*own
	recv := (n-1)*own + (L - own)
	g.bytes.Add(r, int64(sent)*4, int64(recv)*4)
	return nil
}

// autoAllReduce runs the algorithm the group's auto table picks for this
// message size. Every rank sees the same size, so all pick the same one.
func autoAllReduce(c *rankComm, ctx context.Context, x []float32) error {
	return c.g.autoAlg[c.g.auto.pick(int64(len(x))*4)](c, ctx, x)
}
