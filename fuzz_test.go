package pruneguard

import (
	"math/rand/v2"
	"testing"
)

// fuzzSeeds are corpus entries: a few PRNG byte strings, so that the fuzzer
// starts from sequences that reach prunes, streams and schema plans.
func fuzzSeeds(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 1, 1, 3, 0, 0, 0, 16, 90, 90, 90, 90, 90})
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 42))
		b := make([]byte, 64+r.IntN(512))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(b)
	}
}

// FuzzPrune decodes the input into a configuration, an event sequence and
// plans (some applied after more events arrived). It must never panic, and
// every applied decision must keep the invariants; the reference model
// must agree with the Context after every step.
func FuzzPrune(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		h := newPropHarness(&byteSource{b: data}, pruneOps, 0)
		if err := h.run(256); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzEvents drives the event API alone, valid and malformed events
// mixed: failures must be input errors that change nothing, successes
// must keep the Context in agreement with the reference model.
func FuzzEvents(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		h := newPropHarness(&byteSource{b: data}, eventOps, 0)
		if err := h.run(256); err != nil {
			t.Fatal(err)
		}
	})
}
