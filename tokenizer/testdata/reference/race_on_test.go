//go:build race

package main

// raceEnabled reports a build with the race detector, which makes the
// reference ten times slower; the random test then runs fewer texts.
const raceEnabled = true
