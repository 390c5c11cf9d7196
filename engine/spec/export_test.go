package spec

// WithWrongResidual returns o set to resample from p itself after a
// rejection instead of from norm(max(p-q, 0)): a deliberate bug that the
// statistical test must catch.
func WithWrongResidual(o Options) Options {
	o.residual = func(r, p, _ []float32, _ int32) { copy(r, p) }
	return o
}

// BaselineDue exposes the interleaved baseline schedule.
var BaselineDue = baselineDue
