//go:build cuda

package cuda

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/spec"
)

var _ spec.FeatureTarget = (*Target)(nil)

// featureCapture copies the residual stream out after chosen layers (the
// EAGLE-3 features) as part of the forward pass itself.
//
// Inside the step (and so inside its CUDA graph) each captured layer's
// output x (T, dim) is copied device-to-device into its slot of dev; after
// the step the slots are copied to pinned host memory on the same stream,
// before the one synchronize the step already has. The graphs are keyed by
// the capture set as well as (T, logits mode), so changing the set selects
// (or captures) other graphs instead of invalidating them; graphs of
// earlier sets are freed when another set is chosen, never when capture is
// only turned off (a run with a head and a plain run, or a baseline
// segment, keep both warm).
type featureCapture struct {
	layers []int  // as SetCapture got them: the order of Captured
	on     []bool // (layers) per model layer: copied in the step
	key    string // the distinct valid layers, sorted ("" = none)
	pruned string // the key graphs were last pruned for

	dev  cu.DevicePtr // (layers, T, dim) float32 for the step's T; slot = model layer
	host pinned       // (layers, T, dim) float32, the same layout
	out  [][]float32  // (len(layers)) of (T, dim): the last forward's features, reused
}

// SetCapture implements spec.FeatureTarget: later forwards copy out the
// residual stream (T, dim) after each listed layer (nil: none). Layers
// outside [0, Layers) capture nothing (their Captured entry is empty).
func (t *Target) SetCapture(layers []int) {
	c := &t.cap
	c.layers = slices.Clone(layers)
	c.on = nil
	var ks []string
	for l := range t.cfg.Layers {
		if slices.Contains(layers, l) {
			if c.on == nil {
				c.on = make([]bool, t.cfg.Layers)
			}
			c.on[l] = true
			ks = append(ks, strconv.Itoa(l))
		}
	}
	c.key = strings.Join(ks, ",")
	if len(layers) == 0 {
		c.out = c.out[:0]
		return
	}
	for len(c.out) < len(layers) {
		c.out = append(c.out, nil)
	}
	c.out = c.out[:len(layers)]
	for i := range c.out {
		c.out[i] = c.out[i][:0]
	}
}

// Captured implements spec.FeatureTarget: per SetCapture layer, (T, dim)
// features of the last forward's T tokens (all chunks of a long prefill).
// Valid until the next forward.
func (t *Target) Captured() [][]float32 {
	if len(t.cap.layers) == 0 {
		return nil
	}
	return t.cap.out
}

// prepareCapture allocates the capture buffers on first use (their size is
// fixed, so graphs that hold dev stay valid) and, when another capture set
// is chosen, frees the graphs of earlier sets (not those without capture,
// and not when capture is only turned off: a speculative run's baseline
// tokens decode without it, spec.plainAhead). The device is bound.
func (t *Target) prepareCapture() error {
	c := &t.cap
	if c.key != c.pruned && c.key != "" { // turning capture off keeps the set's graphs (a baseline segment)
		for k, g := range t.graphs {
			if k.capture != "" && k.capture != c.key {
				g.destroy()
				delete(t.graphs, k)
			}
		}
		c.pruned = c.key
	}
	if c.key == "" || c.dev != 0 {
		return nil
	}
	n := int64(t.cfg.Layers) * MaxTokens * int64(t.cfg.Dim) * 4
	p, err := cu.MemAlloc(n)
	if err != nil {
		return fmt.Errorf("cuda: cuMemAlloc(%d bytes) for captured hidden states: %w", n, err)
	}
	h, err := allocPinned(int(n))
	if err != nil {
		cu.MemFree(p)
		return fmt.Errorf("cuda: host buffer for captured hidden states: %w", err)
	}
	t.bufs = append(t.bufs, p)
	c.dev, c.host = p, h
	return nil
}

// captureLayer enqueues the copy of x (T, dim) after layer l when l is
// captured (inside the step: recorded into its graph), by the copy_f32
// kernel (with PDL, as the step's other kernels) or, with
// RIGSCOPE_CUDA_CAPK=0, a memcpy.
func (t *Target) captureLayer(l, T int) error {
	c := &t.cap
	if c.on == nil || !c.on[l] || c.dev == 0 {
		return nil
	}
	n := T * t.cfg.Dim // floats
	dst := c.dev + cu.DevicePtr(int64(l)*int64(4*n))
	if !t.tune.CaptureKernel {
		if err := cu.MemcpyDtoDAsync(dst, t.x, int64(4*n), t.stream); err != nil {
			return fmt.Errorf("cuda: capture layer %d: %w", l, err)
		}
		return nil
	}
	t.ls = t.stream
	return t.kernel("capture", int64(4*n), "copy_f32", [3]int{min((n+255)/256, 64), 1, 1}, [3]int{256, 1, 1},
		ptr(dst), ptr(t.x), i64(n))
}

// copyCaptureBack enqueues the copy of the captured slots to host (the
// same layout as dev; after the step, before its synchronize): one copy
// from the first captured layer's slot to the last's (the slots between
// come along; a copy's fixed cost is most of the cost at a step's sizes).
func (t *Target) copyCaptureBack(T int, host pinned) error {
	c := &t.cap
	lo, hi := -1, -1
	for l, on := range c.on {
		if on {
			if lo < 0 {
				lo = l
			}
			hi = l
		}
	}
	if lo < 0 {
		return nil
	}
	n := int64(T * t.cfg.Dim * 4)
	off := int64(lo) * n
	if err := cu.MemcpyDtoHAsync(unsafe.Add(host.p, off), c.dev+cu.DevicePtr(off), int64(hi-lo+1)*n, t.stream); err != nil {
		return fmt.Errorf("cuda: copy captured layers %d..%d back: %w", lo, hi, err)
	}
	return nil
}

// collectCapture appends the step's features (copied to from, whose
// copy has finished) to the per-layer outputs; first starts a new forward.
func (t *Target) collectCapture(T int, first bool, from pinned) {
	c := &t.cap
	if len(c.layers) == 0 {
		return
	}
	td := T * t.cfg.Dim
	host := from.floats()
	for i, l := range c.layers {
		if first {
			c.out[i] = c.out[i][:0]
		}
		if c.on == nil || l < 0 || l >= len(c.on) {
			continue
		}
		c.out[i] = append(c.out[i], host[l*td:(l+1)*td]...)
	}
}
