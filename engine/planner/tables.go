package planner

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Range is an estimate with the range it may fall in: V the point
// estimate, Lo and Hi its bounds (Lo <= V <= Hi).
type Range struct {
	V  float64 `json:"v"`
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// Exact is a range of zero width.
func Exact(v float64) Range { return Range{v, v, v} }

// Add is the sum of two estimates, bounds added.
func (r Range) Add(o Range) Range { return Range{r.V + o.V, r.Lo + o.Lo, r.Hi + o.Hi} }

// Scale multiplies by a non-negative constant.
func (r Range) Scale(c float64) Range { return Range{r.V * c, r.Lo * c, r.Hi * c} }

// Div is r/o with the widest bounds (r and o positive).
func (r Range) Div(o Range) Range {
	if o.V <= 0 || o.Lo <= 0 || o.Hi <= 0 {
		return Range{}
	}
	return Range{r.V / o.V, r.Lo / o.Hi, r.Hi / o.Lo}
}

// Mix is p*r + (1-p)*o for a weight p in [0, 1].
func Mix(p float64, r, o Range) Range { return r.Scale(p).Add(o.Scale(1 - p)) }

// SpreadOf summarizes repeated measurements: the median, with the 10th and
// 90th percentiles as the range (the spread a prediction inherits from
// the machine's load while it was measured).
func SpreadOf(xs []float64) Range {
	if len(xs) == 0 {
		return Range{}
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	q := func(p float64) float64 {
		pos := p * float64(len(s)-1)
		i := int(pos)
		if i+1 >= len(s) {
			return s[len(s)-1]
		}
		return s[i] + (pos-float64(i))*(s[i+1]-s[i])
	}
	return Range{q(0.5), q(0.1), q(0.9)}
}

// micros converts durations to microseconds.
func micros(ds []time.Duration) []float64 {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d.Nanoseconds()) / 1e3
	}
	return xs
}

func (r Range) valid() bool {
	for _, v := range []float64{r.V, r.Lo, r.Hi} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return false
		}
	}
	return r.Lo <= r.V && r.V <= r.Hi
}

// AllReducePoint is one measured cell: one call of Backend on a group of
// Ranks with a message of Bytes, in microseconds.
type AllReducePoint struct {
	Device  string `json:"device"`
	Ranks   int    `json:"ranks"`
	Backend string `json:"backend"`
	Bytes   int64  `json:"bytes"`
	Us      Range  `json:"us"`
}

// AllReduceTable is the rig's allreduce latency per device, backend, group
// size and message size.
type AllReduceTable struct {
	Points []AllReducePoint `json:"points"`
}

// Lookup is the time of one call, interpolated log-log between the two
// measured sizes around bytes; a size outside the measured ones, or a
// backend or group size never measured, is a Missing measurement.
func (t *AllReduceTable) Lookup(device string, ranks int, backend string, bytes int64) (Range, *Missing) {
	var pts []AllReducePoint
	if t != nil {
		for _, p := range t.Points {
			if p.Device == device && p.Ranks == ranks && p.Backend == backend {
				pts = append(pts, p)
			}
		}
	}
	miss := &Missing{Kind: "allreduce", Device: device, TP: ranks, Backend: backend, Bytes: bytes}
	if len(pts) == 0 {
		return Range{}, miss
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].Bytes < pts[j].Bytes })
	i := sort.Search(len(pts), func(i int) bool { return pts[i].Bytes >= bytes })
	switch {
	case i < len(pts) && pts[i].Bytes == bytes:
		return pts[i].Us, nil
	case i == 0 || i == len(pts):
		return Range{}, miss
	}
	a, b := pts[i-1], pts[i]
	f := math.Log(float64(bytes)/float64(a.Bytes)) / math.Log(float64(b.Bytes)/float64(a.Bytes))
	lerp := func(x, y float64) float64 {
		if x <= 0 || y <= 0 {
			return x + f*(y-x)
		}
		return math.Exp(math.Log(x) + f*(math.Log(y)-math.Log(x)))
	}
	return Range{lerp(a.Us.V, b.Us.V), lerp(a.Us.Lo, b.Us.Lo), lerp(a.Us.Hi, b.Us.Hi)}, nil
}

// ComputePoint is the target's forward pass of Tokens rows at TP size TP
// on Device, timed with allreduce backend Backend ("" at TP 1): WallUs the
// forward's wall time, AllReduceUs rank 0's time inside its Calls
// allreduce calls (its waits for slower ranks included; 0 where the
// device does not count them).
type ComputePoint struct {
	Model       string `json:"model"` // Shape.Key of the model timed
	Device      string `json:"device"`
	TP          int    `json:"tp"`
	Backend     string `json:"backend,omitempty"`
	Tokens      int    `json:"tokens"`
	WallUs      Range  `json:"wall_us"`
	AllReduceUs Range  `json:"allreduce_us"`
	Calls       int    `json:"allreduce_calls"`
}

// ComputeTable holds the timed forwards.
type ComputeTable struct {
	Points []ComputePoint `json:"points"`
}

// Lookup is the forward of tokens rows for model at TP tp on device timed
// with backend ("" at TP 1): the timed point, or linear interpolation
// between the two timed batch sizes around tokens (a forward's time is
// close to linear in its rows at these sizes). A size outside the timed
// ones, or a backend never timed at this TP size, is a Missing
// measurement.
func (t *ComputeTable) Lookup(model, device string, tp int, backend string, tokens int) (ComputePoint, *Missing) {
	var pts []ComputePoint
	if t != nil {
		for _, p := range t.Points {
			if p.Model == model && p.Device == device && p.TP == tp && (tp == 1 || p.Backend == backend) {
				pts = append(pts, p)
			}
		}
	}
	miss := &Missing{Kind: "compute", Device: device, TP: tp, Tokens: tokens}
	if tp > 1 {
		miss.Backend = backend
	}
	if len(pts) == 0 {
		return ComputePoint{}, miss
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].Tokens < pts[j].Tokens })
	i := sort.Search(len(pts), func(i int) bool { return pts[i].Tokens >= tokens })
	switch {
	case i < len(pts) && pts[i].Tokens == tokens:
		return pts[i], nil
	case i == 0 || i == len(pts):
		return ComputePoint{}, miss
	}
	a, b := pts[i-1], pts[i]
	f := float64(tokens-a.Tokens) / float64(b.Tokens-a.Tokens)
	out := a
	out.Tokens = tokens
	out.WallUs, out.AllReduceUs = Mix(1-f, a.WallUs, b.WallUs), Mix(1-f, a.AllReduceUs, b.AllReduceUs)
	if a.Calls != b.Calls {
		out.Calls = 0 // no one count of calls to report
	}
	return out, nil
}

// Backends lists the backends timed at TP tp for model on device, sorted.
func (t *ComputeTable) Backends(model, device string, tp int) []string {
	var out []string
	if t != nil {
		for _, p := range t.Points {
			if p.Model == model && p.Device == device && p.TP == tp && !slices.Contains(out, p.Backend) {
				out = append(out, p.Backend)
			}
		}
	}
	sort.Strings(out)
	return out
}

// DraftPoint is a drafter's proposal of K tokens (tree branching Tree)
// on Device, in microseconds.
type DraftPoint struct {
	Drafter string `json:"drafter"` // DrafterKey
	Device  string `json:"device"`
	K       int    `json:"k"`
	Tree    int    `json:"tree,omitempty"`
	Us      Range  `json:"us"`
}

// DraftTable holds the timed proposals.
type DraftTable struct {
	Points []DraftPoint `json:"points"`
}

// Lookup is the proposal time of drafter at k (and tree) on device.
func (t *DraftTable) Lookup(drafter, device string, k, tree int) (Range, *Missing) {
	if t != nil {
		for _, p := range t.Points {
			if p.Drafter == drafter && p.Device == device && p.K == k && p.Tree == tree {
				return p.Us, nil
			}
		}
	}
	return Range{}, &Missing{Kind: "draft", Device: device, Drafter: drafter, K: k, Tree: tree}
}

// Missing names a measurement a prediction needs and the planner does not
// have.
type Missing struct {
	Kind    string `json:"kind"` // allreduce | compute | draft
	Device  string `json:"device"`
	TP      int    `json:"tp,omitempty"`
	Backend string `json:"backend,omitempty"`
	Bytes   int64  `json:"bytes,omitempty"`
	Tokens  int    `json:"tokens,omitempty"`
	Drafter string `json:"drafter,omitempty"`
	K       int    `json:"k,omitempty"`
	Tree    int    `json:"tree,omitempty"`
}

func (m Missing) String() string {
	switch m.Kind {
	case "allreduce":
		if m.Backend == "auto" {
			msg := fmt.Sprintf("no auto table for %d ranks on %s (what --allreduce auto picks by message size)", m.TP, m.Device)
			if m.Device != "cpu" {
				msg += fmt.Sprintf("; plan --calibrate reads the %s step's own (or measures it with the step's kernels, cached per machine, GPU and build)", m.Device)
			}
			return msg
		}
		msg := fmt.Sprintf("no allreduce measurement of %s on %d %s ranks at %d bytes", m.Backend, m.TP, m.Device, m.Bytes)
		if m.Device != "cpu" {
			msg += fmt.Sprintf(" (measure it: rigscope allreduce-bench --device %s --ranks %d --backend %s --sizes %d --json > FILE, then plan --allreduce-table FILE)", m.Device, m.TP, m.Backend, m.Bytes)
		}
		return msg
	case "compute":
		if m.TP > 1 && m.Backend != "" {
			msg := fmt.Sprintf("no timed forward of a %d-token batch at TP %d with %s on %s", m.Tokens, m.TP, m.Backend, m.Device)
			if m.Device != "cpu" {
				msg += fmt.Sprintf(" (nor an allreduce table of %s and of a backend whose forward was timed, to swap its calls: rigscope allreduce-bench --device %s --ranks %d --json, given to plan --allreduce-table)", m.Backend, m.Device, m.TP)
			}
			return msg
		}
		return fmt.Sprintf("no timed forward of a %d-token batch at TP %d on %s", m.Tokens, m.TP, m.Device)
	case "draft":
		shape := "chain"
		if m.Tree > 0 {
			shape = fmt.Sprintf("tree of %d", m.Tree)
		}
		msg := fmt.Sprintf("no draft time of %s at k=%d (%s) on %s", m.Drafter, m.K, shape, m.Device)
		if strings.HasPrefix(m.Drafter, "eagle3") {
			msg += " (an EAGLE-3 head drafts from the target's hidden states: its time comes from a logged run; run it once)"
		}
		return msg
	}
	return "missing measurement " + m.Kind
}
