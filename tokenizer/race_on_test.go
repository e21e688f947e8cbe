//go:build race

package tokenizer_test

// raceEnabled reports a build with the race detector, under which
// sync.Pool drops items at random and allocation counts mean nothing.
const raceEnabled = true
