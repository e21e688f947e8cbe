//go:build race

package pruneguard

// underRace is set when the tests run under the race detector, which
// multiplies the time of the longest tests of this package.
const underRace = true
