//go:build race

package draftmodel_test

const raceEnabled = true
