//go:build race

package pruneguard_test

// raceEnabled is set when the tests run under the race detector, which
// multiplies the memory and time of the largest tests.
const raceEnabled = true
