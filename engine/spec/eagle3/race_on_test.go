//go:build race

package eagle3_test

const raceEnabled = true
