package wire

import (
	"testing"

	"github.com/pruneguard/pruneguard"
	"pgregory.net/rapid"
)

// TestIndexOfMatchesSlow: the digit-by-digit reading of a message id
// answers as strconv's does, for ids ID gives and for any other string.
func TestIndexOfMatchesSlow(t *testing.T) {
	for _, s := range []string{"", "m", "m0", "m00", "m01", "m9", "m10", "m+1", "m-1", "m1_0", "n1", "m123456789", "m1234567890", "m99999999999999999999", "m٣", "m 1", "m1 "} {
		for _, n := range []int{0, 1, 10, 1 << 30} {
			i, ok := indexOf(pruneguard.MessageID(s), n)
			j, ok2 := indexOfSlow(pruneguard.MessageID(s), n)
			if i != j || ok != ok2 {
				t.Errorf("indexOf(%q, %d) = %d, %v; strconv reads %d, %v", s, n, i, ok, j, ok2)
			}
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		var s string
		if rapid.Bool().Draw(t, "made by ID") {
			s = string(ID(rapid.IntRange(0, 1<<31).Draw(t, "i")))
		} else {
			s = rapid.StringMatching(`m?[0-9+\-_a ]{0,12}`).Draw(t, "s")
		}
		n := rapid.IntRange(0, 1<<31).Draw(t, "n")
		i, ok := indexOf(pruneguard.MessageID(s), n)
		j, ok2 := indexOfSlow(pruneguard.MessageID(s), n)
		if i != j || ok != ok2 {
			t.Fatalf("indexOf(%q, %d) = %d, %v; strconv reads %d, %v", s, n, i, ok, j, ok2)
		}
	})
}
