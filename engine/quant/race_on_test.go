//go:build race

package quant

// raceEnabled: the race detector slows the k-quant encoders about 30x, so
// the tests write the cheap types only (engine/tensor tests the encoders).
const raceEnabled = true
