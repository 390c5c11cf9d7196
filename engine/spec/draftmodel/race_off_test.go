//go:build !race

package draftmodel_test

const raceEnabled = false
