package tp

import (
	"context"
	"errors"
	"fmt"

	"strings"
	"sync"
	"time"

	"rigscope/engine/metrics"
)

// Comm joins the ranks of one tensor-parallel group. One Comm value per
// rank; each rank is a goroutine.
type Comm interface {
	Rank() int
	Size() int
	// AllReduceSum replaces x with the elementwise sum of every rank's x.
	// Every rank calls it with the same len(x), in the same order of calls.
	AllReduceSum(ctx context.Context, x []float32) error
	// AllGather writes rank j's in to out[j*len(in):(j+1)*len(in)];
	// len(out) == Size()*len(in), and len(in) is the same on every rank.
	AllGather(ctx context.Context, in, out []float32) error
}

// BackendInfo describes one allreduce backend.
type BackendInfo struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"` // why it is unavailable
	Exact     bool   `json:"exact"`            // float32-exact sum (compressed ones are not)
	Summary   string `json:"summary"`
}

// MaxRanks bounds a CPU group's size.
const MaxRanks = 64

// algorithm is one allreduce implementation; it runs on every rank.
type algorithm func(c *rankComm, ctx context.Context, x []float32) error

var backends = []struct {
	info BackendInfo
	algo algorithm
}{
	{BackendInfo{Name: "ring", Available: true, Exact: true, Summary: "reduce-scatter then all-gather around a ring: 2(n-1) steps"}, ringAllReduce},
	{BackendInfo{Name: "tree", Available: true, Exact: true, Summary: "binary-tree reduce to rank 0, then broadcast: 2 log2(n) steps"}, treeAllReduce},
	{BackendInfo{Name: "oneshot", Available: true, Exact: true, Summary: "every rank reads every peer's buffer and reduces: 1 step"}, oneshotAllReduce},
	{BackendInfo{Name: "twoshot", Available: true, Exact: true, Summary: "reduce-scatter by chunks, then all-gather: 2 steps"}, twoshotAllReduce},
	{BackendInfo{Name: "compressed", Available: true, Summary: "twoshot with an int8 wire format, one float32 scale per 32 values"}, compressedInt8AllReduce},
	{BackendInfo{Name: "compressed-bf16", Available: true, Summary: "twoshot with a bf16 wire format"}, compressedBF16AllReduce},
	{BackendInfo{Name: "auto", Available: true, Exact: true, Summary: "picks ring/tree/oneshot/twoshot per message size from a table measured on this machine"}, nil},
	{BackendInfo{Name: "nccl", Reason: "CPU ranks are goroutines sharing memory; NCCL needs GPU ranks (a -tags cuda build on a GPU machine, one GPU per rank)", Summary: "NVIDIA NCCL"}, nil},
}

// Available lists every backend this build knows, with the reason for each
// unavailable one.
func Available() []BackendInfo {
	out := make([]BackendInfo, len(backends))
	for i, b := range backends {
		out[i] = b.info
	}
	return out
}

// Names returns the names of the available backends.
func Names() []string {
	var out []string
	for _, b := range backends {
		if b.info.Available {
			out = append(out, b.info.Name)
		}
	}
	return out
}

// UnknownBackendError reports a backend name this build does not offer.
type UnknownBackendError struct{ Name string }

func (e *UnknownBackendError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tp: unknown allreduce backend %q; available: %s", e.Name, strings.Join(Names(), ", "))
	for _, bi := range backends {
		if !bi.info.Available {
			fmt.Fprintf(&b, "; %s is unavailable: %s", bi.info.Name, bi.info.Reason)
		}
	}
	return b.String()
}

// GroupOptions configures a Group. The zero value is usable.
type GroupOptions struct {
	// Latency and Bytes receive the group's measurements; nil makes private
	// ones (read them with Stats). Share them with a metrics.Recorder to see
	// them live. Bytes must count at least the group's ranks.
	Latency *metrics.LatencySet
	Bytes   *metrics.RankBytes
	// Auto is the table the auto backend uses; nil loads it from the
	// calibration cache or measures it (see LoadOrCalibrate).
	Auto *AutoTable
	// CacheDir holds the calibration cache; "" means $RIGSCOPE_CACHE_DIR,
	// else os.UserCacheDir()/rigscope.
	CacheDir string
	// CalibrationBudget bounds the auto sweep; 0 means 1.5 s.
	CalibrationBudget time.Duration
	// Calibrating, when set, is called before (done false) and after (done
	// true) an auto calibration sweep actually runs, with the reason; a
	// table read from the cache calls nothing.
	Calibrating func(why string, done bool)
	// Warn, when set, receives a warning the caller should show: a bad
	// calibration cache that was moved aside and is being redone.
	Warn func(msg string)
	// NCCL are the settings of the nccl backend's communicators (GPU
	// ranks; CPU ranks have no nccl backend). The device makes new
	// communicators only when they or the ranks change.
	NCCL NCCLSettings
}

// Group creates the per-rank Comms of one run with one backend. A Group
// keeps its backend for its whole life; swap backends by making a new Group
// (cheap: no weights live here). After Abort a Group stays failed.
type Group struct {
	backend string
	n       int
	algo    algorithm
	auto    *AutoTable
	autoAlg []algorithm // auto.Rules[i] -> algorithm

	bar   barrier
	wire  []wire
	comms []*rankComm

	lat   *metrics.LatencySet
	bytes *metrics.RankBytes
}

// wire is what one rank publishes for its peers to read. Only the owner
// writes it, and only between barriers; peers read it after the next one.
type wire struct {
	x       []float32    // the caller's buffer (ring, tree, allgather)
	n       [2]int       // len of the published buffer by call parity, checked by peers
	scratch [2][]float32 // double-buffered copy of the input (oneshot, twoshot)
	q       [2][]int8    // int8 wire: quantized input
	qs      [2][]float32 //   its per-block scales
	q2      [2][]int8    //   quantized reduced chunk
	q2s     [2][]float32 //   its scales
	h       [2][]uint16  // bf16 wire: input
	h2      [2][]uint16  //   reduced chunk
	_       [64]byte     // keep ranks' headers off one cache line
}

// NewGroup makes a group of ranks joined by the named backend.
func NewGroup(backend string, ranks int, opts GroupOptions) (*Group, error) {
	if ranks < 1 || ranks > MaxRanks {
		return nil, fmt.Errorf("tp: %d ranks: a CPU group has 1 to %d ranks", ranks, MaxRanks)
	}
	g := &Group{backend: backend, n: ranks, lat: opts.Latency, bytes: opts.Bytes}
	found := false
	for _, b := range backends {
		if b.info.Name != backend {
			continue
		}
		if !b.info.Available {
			return nil, fmt.Errorf("tp: allreduce backend %q is unavailable: %s", backend, b.info.Reason)
		}
		g.algo, found = b.algo, true
	}
	if !found {
		return nil, &UnknownBackendError{Name: backend}
	}
	if g.lat == nil {
		g.lat = metrics.NewLatencySet()
	}
	if g.bytes == nil {
		g.bytes = metrics.NewRankBytes(ranks)
	} else if g.bytes.Ranks() < ranks {
		return nil, fmt.Errorf("tp: byte counters for %d ranks given to a group of %d", g.bytes.Ranks(), ranks)
	}
	if backend == "auto" && ranks == 1 {
		// One rank never communicates: no table to measure.
		g.auto = &AutoTable{Ranks: 1, Rules: []AutoRule{{MaxBytes: 1, Backend: "ring"}}, Source: "trivial", Note: "one rank: nothing to choose"}
		g.autoAlg = []algorithm{ringAllReduce}
		g.algo = autoAllReduce
	} else if backend == "auto" {
		t := opts.Auto
		if t == nil {
			var err error
			if t, err = LoadOrCalibrate(context.Background(), ranks, opts); err != nil {
				return nil, err
			}
		}
		if t.Ranks != ranks {
			return nil, fmt.Errorf("tp: auto table is for %d ranks, the group has %d", t.Ranks, ranks)
		}
		for _, r := range t.Rules {
			a := algoByName(r.Backend)
			if a == nil || r.Backend == "auto" {
				return nil, fmt.Errorf("tp: auto table names backend %q, which is not an exact one here", r.Backend)
			}
			g.autoAlg = append(g.autoAlg, a)
		}
		if len(g.autoAlg) == 0 {
			return nil, errors.New("tp: auto table has no rules")
		}
		g.auto = t
		g.algo = autoAllReduce
	}
	g.bar.init(ranks)
	g.wire = make([]wire, ranks)
	g.comms = make([]*rankComm, ranks)
	for r := range g.comms {
		g.comms[r] = &rankComm{g: g, rank: r}
	}
	return g, nil
}

// CheckBackend says whether name is an available backend, without making a
// group (so without calibrating auto): nil, *UnknownBackendError, or an
// error with the reason it is unavailable.
func CheckBackend(name string) error {
	for _, b := range backends {
		if b.info.Name == name {
			if !b.info.Available {
				return fmt.Errorf("tp: allreduce backend %q is unavailable: %s", name, b.info.Reason)
			}
			return nil
		}
	}
	return &UnknownBackendError{Name: name}
}

func algoByName(name string) algorithm {
	for _, b := range backends {
		if b.info.Name == name && b.info.Exact && b.algo != nil {
			return b.algo
		}
	}
	return nil
}

// Backend is the group's backend name.
func (g *Group) Backend() string { return g.backend }

// Size is the number of ranks.
func (g *Group) Size() int { return g.n }

// Comm returns rank's Comm; use each from one goroutine only.
func (g *Group) Comm(rank int) Comm { return g.comms[rank] }

// AutoTable is the table an auto group picks from (nil for other backends).
func (g *Group) AutoTable() *AutoTable { return g.auto }

// Abort fails the group: every rank blocked in a collective, and every later
// call, returns an error wrapping err. The first error wins. Use it when one
// rank fails; a rank whose ctx is cancelled aborts the group itself.
func (g *Group) Abort(err error) {
	if err == nil {
		err = errors.New("aborted")
	}
	g.bar.abort(err)
}

// Err is the error the group was aborted with, or nil.
func (g *Group) Err() error { return g.bar.failed() }

// GroupStats is what a group measured.
type GroupStats struct {
	Backend   string                   `json:"backend"`
	Ranks     int                      `json:"ranks"`
	BytesSent []int64                  `json:"bytes_sent_per_rank"`
	BytesRecv []int64                  `json:"bytes_recv_per_rank"`
	Latency   []metrics.LatencySummary `json:"latency"` // per-call, every rank's calls
}

// Stats returns the byte counts and latency summaries so far.
func (g *Group) Stats() GroupStats {
	return GroupStats{
		Backend: g.backend, Ranks: g.n,
		BytesSent: g.bytes.Sent()[:g.n], BytesRecv: g.bytes.Recv()[:g.n],
		Latency: g.lat.Summaries(),
	}
}

// Latency and Bytes are the live measurement sinks.
func (g *Group) Latency() *metrics.LatencySet { return g.lat }
func (g *Group) Bytes() *metrics.RankBytes    { return g.bytes }

// rankComm is one rank's Comm.
type rankComm struct {
	g     *Group
	rank  int
	calls uint64 // collectives made; its parity picks the scratch buffer
}

func (c *rankComm) Rank() int { return c.rank }
func (c *rankComm) Size() int { return c.g.n }

func (c *rankComm) AllReduceSum(ctx context.Context, x []float32) error {
	g := c.g
	if g.n == 1 {
		return g.bar.failed()
	}
	if err := context.Cause(ctx); err != nil { // cancelled before the call: release the peers now
		g.Abort(err)
		return fmt.Errorf("tp: rank %d: %s allreduce: %w", c.rank, g.backend, err)
	}
	start := time.Now()
	err := g.algo(c, ctx, x)
	c.calls++
	if err != nil {
		return fmt.Errorf("tp: rank %d: %s allreduce of %d floats: %w", c.rank, g.backend, len(x), err)
	}
	g.lat.Record(g.backend, int64(len(x))*4, time.Since(start))
	return nil
}

func (c *rankComm) AllGather(ctx context.Context, in, out []float32) error {
	g := c.g
	if len(out) != g.n*len(in) {
		err := fmt.Errorf("tp: rank %d: allgather: len(out) = %d, want %d ranks x %d", c.rank, len(out), g.n, len(in))
		g.Abort(err)
		return err
	}
	w := &g.wire[c.rank]
	w.x, w.n[c.calls&1] = in, len(in)
	err := c.publishWait(ctx)
	c.calls++
	if err != nil {
		return fmt.Errorf("tp: rank %d: allgather of %d floats: %w", c.rank, len(in), err)
	}
	L := len(in)
	for j := range g.n {
		copy(out[j*L:(j+1)*L], g.wire[j].x)
	}
	b := int64(g.n-1) * int64(L) * 4
	g.bytes.Add(c.rank, b, b)
	if err := g.bar.wait(ctx); err != nil { // peers are done reading in
		return fmt.Errorf("tp: rank %d: allgather of %d floats: %w", c.rank, len(in), err)
	}
	return nil
}

// publishWait meets the peers after this rank published its wire, and
// checks that every rank published a buffer of the same length. The
// length is double-buffered by call parity like the scratch: with one
// barrier per call a fast rank may publish its next call's length while a
// slow one still checks this call's.
func (c *rankComm) publishWait(ctx context.Context) error {
	g := c.g
	if err := g.bar.wait(ctx); err != nil {
		return err
	}
	p := c.calls & 1
	want := g.wire[c.rank].n[p]
	for j := range g.wire {
		if g.wire[j].n[p] != want {
			lens := make([]int, g.n)
			for k := range lens {
				lens[k] = g.wire[k].n[p]
			}
			err := fmt.Errorf("ranks called with different lengths %v", lens)
			g.Abort(err)
			return err
		}
	}
	return nil
}

// barrier is a reusable n-party barrier that an abort or a cancelled ctx
// releases. Each generation has its own channel, closed when the last rank
// arrives, so a wait never misses its wake-up.
type barrier struct {
	n       int
	mu      sync.Mutex
	count   int
	gen     chan struct{}
	aborted chan struct{}
	err     error
}

func (b *barrier) init(n int) {
	b.n = n
	b.gen = make(chan struct{})
	b.aborted = make(chan struct{})
}

func (b *barrier) wait(ctx context.Context) error {
	b.mu.Lock()
	if b.err != nil {
		err := b.err
		b.mu.Unlock()
		return fmt.Errorf("group aborted: %w", err)
	}
	b.count++
	if b.count == b.n {
		close(b.gen)
		b.gen = make(chan struct{})
		b.count = 0
		b.mu.Unlock()
		return nil
	}
	ch := b.gen
	b.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-b.aborted:
		return fmt.Errorf("group aborted: %w", b.failed())
	case <-ctx.Done():
		err := context.Cause(ctx)
		b.abort(err)
		return err
	}
}

func (b *barrier) abort(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = err
		close(b.aborted)
	}
}

func (b *barrier) failed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// chunk returns the bounds of part i of n parts of [0, L), cut on multiples
// of align (the last part takes the remainder). Parts may be empty.
func chunk(L, n, i, align int) (lo, hi int) {
	blocks := (L + align - 1) / align
	lo = min(i*blocks/n*align, L)
	hi = min((i+1)*blocks/n*align, L)
	return lo, hi
}
