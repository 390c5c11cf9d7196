//go:build race

package tp

// raceEnabled: the race detector slows every memory access ~10x, so the
// largest sizes run on fewer rank counts under -race.
const raceEnabled = true
