//go:build cuda

package cuda

import "gorgonia.org/cu"

// launcher enqueues the kernels of one model's step on a stream: the
// matrix products (matvec, glu) and every other launch go through its
// kernel method, which times them when profiling. A Target (the model) and
// a Head (an EAGLE-3 head, head.go) each have one, so both run their
// layers through the same kernels and the same launch policy.
type launcher struct {
	dev    *Device
	tune   Tuning    // the process's measurement knobs (CurrentTuning), read once
	warps  int       // tensor-core block size, when set (cuda-check); else tcWarps picks
	mqks   int       // quantized products' K split, when set (cuda-check); else mqSplit picks
	mf8g   int       // persistent mf8* products' grid, when set (cuda-check: fewer blocks than row blocks); else the SMs' fill
	stream cu.Stream // the step's stream: graphs are captured and replayed here
	ls     cu.Stream // where kernels launch: stream, or a rank's during its phase (onRanks)
	ld     *Device   // a remote rank's GPU during its phase (onRanks): its kernels launch; nil: dev's
	pdl    bool      // launch with programmatic dependent launch (sm_90)
	prof   *profiler // set while ProfileStep times each kernel
	eps    float32   // the model's RMSNorm epsilon (fused norms)
	gelu   bool      // the GLU's activation is GELU-tanh (Gemma 3: the GLU kernels' act argument), not SiLU
	qfuse  *qfuseReq // the next quantized product quantizes its output for the one after (quant.go)
	qin    qready    // what the last quantized product quantized of its output, for the next one
}

// amBlocks is the argmax kernels' blocks per logits row (grid x):
// argmaxBlocks, or fewer with Tuning.ArgmaxBlocks (the partials'
// buffers hold argmaxBlocks a row). An argmax does not depend on how its
// blocks split the row.
func (t *launcher) amBlocks() int {
	if t.tune.ArgmaxBlocks > 0 {
		return t.tune.ArgmaxBlocks
	}
	return argmaxBlocks
}
