//go:build race

package main

// raceOn reports a -race build, which runs the generated sweep on fewer
// bodies.
const raceOn = true
