//go:build !race

package pruneguard

const underRace = false
