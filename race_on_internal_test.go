//go:build race

package pruneguard

// underRace is set when the package's own tests run under the race
// detector, as raceEnabled is for the external tests.
const underRace = true
