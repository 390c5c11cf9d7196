//go:build race

package tp

// raceEnabled: the race detector slows every memory access ~10x, so under
// -race the 1M+3-element case runs on 3 ranks only (every backend) and the
// 16M case on ring only; without -race every combination runs.
const raceEnabled = true
