package model

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// opLog is an Ops that records the calls Step makes, failing at call
// failAt (1-based; 0: never).
type opLog struct {
	calls  []string
	failAt int
}

var errOp = errors.New("op failed")

func (o *opLog) rec(format string, a ...any) error {
	o.calls = append(o.calls, fmt.Sprintf(format, a...))
	if len(o.calls) == o.failAt {
		return errOp
	}
	return nil
}

func (o *opLog) Embed(T int, scale float32) error { return o.rec("embed %d x%g", T, scale) }
func (o *opLog) AttentionInput(l, T int) error    { return o.rec("qkv %d", l) }
func (o *opLog) Attend(l, T int) error            { return o.rec("attend %d", l) }
func (o *opLog) LatentAttention(l, T int) error   { return o.rec("mla %d", l) }
func (o *opLog) GatedMLP(l, T int, a Activation) error {
	return o.rec("glu %d act%d", l, a)
}
func (o *opLog) MixtureOfExperts(l, T int) error          { return o.rec("moe %d", l) }
func (o *opLog) AddProduct(l int, role Role, T int) error { return o.rec("add %d %v", l, role) }
func (o *opLog) Capture(l, T int) error                   { return o.rec("capture %d", l) }
func (o *opLog) Logits(first, rows int, softcap float32) error {
	return o.rec("logits %d+%d cap%g", first, rows, softcap)
}

// Step calls each block's operations in the paper's order, for each
// block variant and logits mode.
func TestStepSequence(t *testing.T) {
	dense := "qkv %[1]d|attend %[1]d|add %[1]d attention output|glu %[1]d act0|add %[1]d MLP down|capture %[1]d"
	layer := func(f string, l int) string { return fmt.Sprintf(f, l) }
	for _, tc := range []struct {
		name string
		cfg  Config
		T    int
		mode LogitsMode
		want []string
	}{
		{"llama, last row", Config{Layers: 2, Dim: 16}, 3, LogitsLast,
			[]string{"embed 3 x1", layer(dense, 0), layer(dense, 1), "logits 2+1 cap0"}},
		{"llama, every row", Config{Layers: 1, Dim: 16}, 4, LogitsAll,
			[]string{"embed 4 x1", layer(dense, 0), "logits 0+4 cap0"}},
		{"llama, no logits", Config{Layers: 1, Dim: 16}, 2, LogitsNone,
			[]string{"embed 2 x1", layer(dense, 0)}},
		{"gemma 3: scaled embedding, GELU, soft-capping", Config{Layers: 1, Dim: 16, Gemma: Gemma3{On: true, FinalSoftcap: 30}}, 1, LogitsLast,
			[]string{"embed 1 x4", "qkv 0|attend 0|add 0 attention output|glu 0 act1|add 0 MLP down|capture 0", "logits 0+1 cap30"}},
		{"moe after a dense layer", Config{Layers: 2, Dim: 16, MoE: MoE{Experts: 4, PerToken: 2, FirstDense: 1}}, 1, LogitsLast,
			[]string{"embed 1 x1", layer(dense, 0), "qkv 1|attend 1|add 1 attention output|moe 1|capture 1", "logits 0+1 cap0"}},
		{"latent attention", Config{Layers: 1, Dim: 16, MLA: MLA{QRank: 8, KVRank: 4, NopeDim: 4, RopeDim: 4, VDim: 4}}, 1, LogitsLast,
			[]string{"embed 1 x1", "mla 0|add 0 attention output|glu 0 act0|add 0 MLP down|capture 0", "logits 0+1 cap0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &opLog{}
			if err := Step(o, &tc.cfg, tc.T, tc.mode); err != nil {
				t.Fatal(err)
			}
			want := strings.Split(strings.Join(tc.want, "|"), "|")
			if got := strings.Join(o.calls, "|"); got != strings.Join(want, "|") {
				t.Errorf("calls\n%s\nwant\n%s", strings.ReplaceAll(got, "|", "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// An operation's error ends the step there and is returned as is.
func TestStepStopsAtError(t *testing.T) {
	c := Config{Layers: 3, Dim: 16}
	for _, at := range []int{1, 2, 5, 13, 20} {
		o := &opLog{failAt: at}
		err := Step(o, &c, 1, LogitsLast)
		if !errors.Is(err, errOp) {
			t.Fatalf("failing call %d: error %v", at, err)
		}
		if len(o.calls) != at {
			t.Errorf("failing call %d: %d calls made", at, len(o.calls))
		}
	}
}

// EmbedScale is Gemma 3's √dim as a float32, 1 otherwise.
func TestEmbedScale(t *testing.T) {
	g := Config{Dim: 640, Gemma: Gemma3{On: true}}
	if got, want := g.EmbedScale(), float32(math.Sqrt(640)); got != want {
		t.Errorf("gemma: %v, want %v", got, want)
	}
	if got := (&Config{Dim: 640}).EmbedScale(); got != 1 {
		t.Errorf("llama: %v, want 1", got)
	}
}
