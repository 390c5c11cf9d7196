//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"gorgonia.org/cu"
)

// PeerResult is the P2P self-test of one ordered GPU pair: a kernel on From
// writes a known pattern into To's memory through the peer pointer and
// reads To's own pattern back; the host checks both.
type PeerResult struct {
	From      int    `json:"from"`       // device ordinal whose kernel runs
	To        int    `json:"to"`         // device ordinal whose memory is accessed
	CanAccess bool   `json:"can_access"` // cuDeviceCanAccessPeer(From, To)
	Enabled   bool   `json:"enabled"`    // cuCtxEnablePeerAccess from From's context succeeded
	Write     bool   `json:"write"`      // From's pattern arrived in To's memory intact
	Read      bool   `json:"read"`       // To's pattern read through the peer pointer intact
	Words     int    `json:"words"`      // 32-bit words written and read
	Err       string `json:"error,omitempty"`
}

// OK says the pair passed every step.
func (p PeerResult) OK() bool { return p.CanAccess && p.Enabled && p.Write && p.Read && p.Err == "" }

func (p PeerResult) String() string {
	if p.OK() {
		return fmt.Sprintf("GPU %d -> GPU %d: ok (peer access enabled; %d KiB written and read back intact)", p.From, p.To, p.Words*4/1024)
	}
	return fmt.Sprintf("GPU %d -> GPU %d: FAILED: %s", p.From, p.To, p.Err)
}

// PeerReport is the self-test of every ordered pair of a set of GPUs.
type PeerReport struct {
	Ordinals []int        `json:"ordinals"`
	Pairs    []PeerResult `json:"pairs"`
}

// OK says every pair passed.
func (r *PeerReport) OK() bool {
	for _, p := range r.Pairs {
		if !p.OK() {
			return false
		}
	}
	return true
}

// Failure names the first failing pair and what failed ("" when all pass).
func (r *PeerReport) Failure() string {
	for _, p := range r.Pairs {
		if !p.OK() {
			return p.String()
		}
	}
	return ""
}

// Matrix draws the result as a From x To table (ok, X = failed, - = self).
func (r *PeerReport) Matrix() string {
	var b strings.Builder
	b.WriteString("from\\to")
	for _, o := range r.Ordinals {
		fmt.Fprintf(&b, " %4s", fmt.Sprintf("G%d", o))
	}
	for _, f := range r.Ordinals {
		fmt.Fprintf(&b, "\n%7s", fmt.Sprintf("G%d", f))
		for _, t := range r.Ordinals {
			cell := "-"
			for _, p := range r.Pairs {
				if p.From == f && p.To == t {
					cell = "ok"
					if !p.OK() {
						cell = "X"
					}
				}
			}
			fmt.Fprintf(&b, " %4s", cell)
		}
	}
	return b.String()
}

// p2pWords is the size of the self-test per pair (256 KiB).
const p2pWords = 1 << 16

// p2pWord is the pattern the p2p_probe kernel writes (kernels/allreduce.cu).
func p2pWord(seed, k uint32) uint32 {
	x := seed*0x9E3779B1 + k*0x85EBCA77 + 0x27d4eb2f
	x ^= x >> 15
	x *= 0x2C1B3C6D
	x ^= x >> 12
	x *= 0x297A2D39
	x ^= x >> 15
	return x
}

func pubSeed(ordinal int) uint32    { return 0xA5000000 + uint32(ordinal) }
func writeSeed(from, to int) uint32 { return 0x5A000000 + uint32(from)<<12 + uint32(to) }

var (
	peerMu    sync.Mutex
	peerCache = map[string]*PeerReport{}
)

// PeerTest enables peer access between every pair of devs (distinct GPUs)
// and runs the write/read self-test on every ordered pair, as vLLM does
// before trusting peer access. The report is cached per device set (peer
// access stays enabled for the process). An error means the test itself
// could not run (allocation, copy); a pair that fails is in the report.
func PeerTest(devs []*Device) (*PeerReport, error) {
	key := fmt.Sprint(ordinalsOf(devs))
	peerMu.Lock()
	defer peerMu.Unlock()
	if r := peerCache[key]; r != nil {
		return r, nil
	}
	r, err := peerTest(devs)
	if err != nil {
		return nil, err
	}
	peerCache[key] = r
	return r, nil
}

func ordinalsOf(devs []*Device) []int {
	out := make([]int, len(devs))
	for i, d := range devs {
		out[i] = d.Ordinal
	}
	return out
}

// p2pMem is one device's self-test memory: inbox (R blocks, block i
// written by GPU i), pub (its own pattern for peers to read), got (R
// blocks, block j read from GPU j).
type p2pMem struct{ inbox, pub, got cu.DevicePtr }

func peerTest(devs []*Device) (*PeerReport, error) {
	R := len(devs)
	rep := &PeerReport{Ordinals: ordinalsOf(devs)}
	seen := map[int]bool{}
	for _, d := range devs {
		if seen[d.Ordinal] {
			return nil, fmt.Errorf("cuda: p2p self-test: GPU %d listed twice (%v)", d.Ordinal, rep.Ordinals)
		}
		seen[d.Ordinal] = true
	}
	mem := make([]p2pMem, R)
	defer func() {
		for r, m := range mem {
			_ = devs[r].Do(func() error { // best effort: a device that cannot bind keeps its buffers
				for _, p := range []cu.DevicePtr{m.inbox, m.pub, m.got} {
					if p != 0 {
						cu.MemFree(p)
					}
				}
				return nil
			})
		}
	}()
	const W = p2pWords
	host := make([]uint32, R*W)
	// Allocate, poison inbox/got, publish each device's pattern.
	for r, d := range devs {
		err := d.Do(func() (err error) {
			m := &mem[r]
			if m.inbox, err = cu.MemAlloc(int64(4 * R * W)); err != nil {
				return err
			}
			if m.got, err = cu.MemAlloc(int64(4 * R * W)); err != nil {
				return err
			}
			if m.pub, err = cu.MemAlloc(int64(4 * W)); err != nil {
				return err
			}
			if err := cu.MemsetD32(m.inbox, 0xDEADBEEF, int64(R*W)); err != nil {
				return err
			}
			if err := cu.MemsetD32(m.got, 0xDEADBEEF, int64(R*W)); err != nil {
				return err
			}
			pub := host[:W]
			for k := range pub {
				pub[k] = p2pWord(pubSeed(d.Ordinal), uint32(k))
			}
			return cu.MemcpyHtoD(m.pub, unsafe.Pointer(&pub[0]), int64(4*W))
		})
		if err != nil {
			return nil, fmt.Errorf("cuda: p2p self-test setup on GPU %d: %w", d.Ordinal, err)
		}
	}
	// Enable peer access and run the probe on every ordered pair.
	for i, di := range devs {
		for j, dj := range devs {
			if i == j {
				continue
			}
			p := PeerResult{From: di.Ordinal, To: dj.Ordinal, Words: W}
			p.Err = probePair(&p, di, dj, mem[i], mem[j], i, j)
			rep.Pairs = append(rep.Pairs, p)
		}
	}
	// Check on the host: GPU j's inbox block i must hold i's pattern for j,
	// GPU i's got block j must hold j's published pattern.
	for r, d := range devs {
		err := d.Do(func() error {
			for _, ptr := range []struct {
				p     cu.DevicePtr
				inbox bool
			}{{mem[r].inbox, true}, {mem[r].got, false}} {
				if err := cu.MemcpyDtoH(unsafe.Pointer(&host[0]), ptr.p, int64(4*R*W)); err != nil {
					return err
				}
				for q := range devs {
					if q == r {
						continue
					}
					var pr *PeerResult
					var seed uint32
					if ptr.inbox { // written by q into r
						pr, seed = pairOf(rep, devs[q].Ordinal, d.Ordinal), writeSeed(devs[q].Ordinal, d.Ordinal)
					} else { // read by r from q
						pr, seed = pairOf(rep, d.Ordinal, devs[q].Ordinal), pubSeed(devs[q].Ordinal)
					}
					if pr.Err != "" {
						continue
					}
					bad, first := 0, -1
					blk := host[q*W : (q+1)*W]
					for k, v := range blk {
						if v != p2pWord(seed, uint32(k)) {
							if first < 0 {
								first = k
							}
							bad++
						}
					}
					what := "read"
					if ptr.inbox {
						what = "write"
					}
					if bad > 0 {
						pr.Err = fmt.Sprintf("%s through the peer pointer: %d of %d words wrong (first at word %d: got %#08x, want %#08x)",
							what, bad, W, first, blk[first], p2pWord(seed, uint32(first)))
					} else if ptr.inbox {
						pr.Write = true
					} else {
						pr.Read = true
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("cuda: p2p self-test readback on GPU %d: %w", d.Ordinal, err)
		}
	}
	return rep, nil
}

func pairOf(rep *PeerReport, from, to int) *PeerResult {
	for i := range rep.Pairs {
		if rep.Pairs[i].From == from && rep.Pairs[i].To == to {
			return &rep.Pairs[i]
		}
	}
	return &PeerResult{Err: "not tested"}
}

// probePair enables From -> To access and runs p2p_probe on From; it
// returns what failed ("" when the kernel ran; the data is checked later).
func probePair(p *PeerResult, di, dj *Device, mi, mj p2pMem, i, j int) string {
	unbind, err := di.Bind()
	if err != nil {
		return err.Error()
	}
	defer unbind()
	can, err := di.dev.CanAccessPeer(dj.dev)
	if err != nil {
		return fmt.Sprintf("cuDeviceCanAccessPeer: %v", err)
	}
	if can == 0 {
		return "no peer access (cuDeviceCanAccessPeer = 0: no NVLink or PCIe P2P path the driver allows)"
	}
	p.CanAccess = true
	if err := dj.ctx.EnablePeerAccess(0); err != nil && !errors.Is(err, cu.PeerAccessAlreadyEnabled) {
		return fmt.Sprintf("cuCtxEnablePeerAccess: %v", err)
	}
	p.Enabled = true
	fn, err := di.fn("p2p_probe")
	if err != nil {
		return err.Error()
	}
	W := p2pWords
	dst := mj.inbox + cu.DevicePtr(4*i*W) // To's inbox block From
	got := mi.got + cu.DevicePtr(4*j*W)   // From's got block To
	if err := launch(fn, [3]int{min(di.SMs, 64), 1, 1}, [3]int{256, 1, 1}, 0, cu.Stream{}, ptr(dst), ptr(mj.pub), ptr(got), uint64(writeSeed(di.Ordinal, dj.Ordinal)), i64(W)); err != nil {
		return fmt.Sprintf("p2p_probe launch: %v", err)
	}
	if err := cu.Synchronize(); err != nil {
		return fmt.Sprintf("p2p_probe kernel: %v (the context may now be unusable)", err)
	}
	return ""
}
