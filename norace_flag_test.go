//go:build !race

package pruneguard_test

const raceEnabled = false
