package sessions_test

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/pruneguard/pruneguard/sessions"
)

func TestIDExamples(t *testing.T) {
	for _, c := range []struct{ tenant, session, want string }{
		{"acme", "3f2a-77", "acme__3f2a-77"},
		{"Acme", "a_b", "_41cme__a_5fb"},
		{"", "", "__"},
		{"a__b", "c", "a_5f_5fb__c"},
		{"a", "_b__c", "a___5fb_5f_5fc"},
	} {
		if got := sessions.ID(c.tenant, c.session); got != c.want {
			t.Errorf("ID(%q, %q) = %q, want %q", c.tenant, c.session, got, c.want)
		}
	}
}

// Any strings give a valid id, and distinct pairs distinct ids: one
// tenant can never name another's session, however it picks its names.
func TestIDInjective(t *testing.T) {
	str := rapid.OneOf(
		rapid.String(),
		rapid.StringOf(rapid.SampledFrom([]rune{'a', '_', '-', 'h', '0', 'A', '.'})),
		rapid.StringN(60, 150, -1),
	)
	rapid.Check(t, func(rt *rapid.T) {
		t1, s1 := str.Draw(rt, "t1"), str.Draw(rt, "s1")
		t2, s2 := str.Draw(rt, "t2"), str.Draw(rt, "s2")
		// Often split one string two ways.
		if rapid.Bool().Draw(rt, "resplit") {
			joined := t1 + s1
			i := rapid.IntRange(0, len(joined)).Draw(rt, "at")
			t2, s2 = joined[:i], joined[i:]
		}
		a, b := sessions.ID(t1, s1), sessions.ID(t2, s2)
		if !sessions.ValidID(a) || !sessions.ValidID(b) {
			rt.Fatalf("invalid id %q or %q", a, b)
		}
		if (a == b) != (t1 == t2 && s1 == s2) {
			rt.Fatalf("ID(%q, %q) = %q, ID(%q, %q) = %q", t1, s1, a, t2, s2, b)
		}
	})
}

func FuzzID(f *testing.F) {
	f.Add("acme", "s1", "acme_", "_s1")
	f.Add("a", "__b", "a__", "b")
	f.Add(strings.Repeat("T", 100), "x", strings.Repeat("T", 100), "y")
	f.Fuzz(func(t *testing.T, t1, s1, t2, s2 string) {
		a, b := sessions.ID(t1, s1), sessions.ID(t2, s2)
		if !sessions.ValidID(a) {
			t.Fatalf("ID(%q, %q) = %q, not a valid id", t1, s1, a)
		}
		if (a == b) != (t1 == t2 && s1 == s2) {
			t.Fatalf("ID(%q, %q) = %q, ID(%q, %q) = %q", t1, s1, a, t2, s2, b)
		}
	})
}

// Long pairs are hashed, to a form no short pair gives.
func TestIDLong(t *testing.T) {
	long := sessions.ID(strings.Repeat("T", 80), "s")
	if len(long) != 66 || !strings.HasPrefix(long, "_h") || !sessions.ValidID(long) {
		t.Fatalf("ID of a long pair = %q", long)
	}
	if other := sessions.ID(strings.Repeat("T", 80), "t"); other == long {
		t.Fatal("two long pairs share an id")
	}
	// The longest short form is kept.
	tenant := strings.Repeat("t", sessions.MaxIDLen-2)
	if got := sessions.ID(tenant, ""); got != tenant+"__" {
		t.Fatalf("ID of a pair just at the limit = %q", got)
	}
}

func TestValidID(t *testing.T) {
	for _, id := range []string{"a", "-", "_", "acme__s1", strings.Repeat("z", sessions.MaxIDLen)} {
		if !sessions.ValidID(id) {
			t.Errorf("ValidID(%q) = false", id)
		}
	}
	for _, id := range []string{"", "A", "a.b", "a/b", "ü", strings.Repeat("z", sessions.MaxIDLen+1)} {
		if sessions.ValidID(id) {
			t.Errorf("ValidID(%q) = true", id)
		}
	}
}
