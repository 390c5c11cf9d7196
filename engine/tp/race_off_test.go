//go:build !race

package tp

const raceEnabled = false
