//go:build race

package wire_test

// raceEnabled is set when the tests run under the race detector, which
// multiplies the time of the largest tests.
const raceEnabled = true
