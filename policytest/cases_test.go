package policytest

import (
	"reflect"
	"slices"
	"testing"

	"github.com/pruneguard/pruneguard"
)

func scenarioNamed(t *testing.T, name string) scenario {
	t.Helper()
	for _, sc := range scenarios {
		if sc.name == name {
			return sc
		}
	}
	t.Fatalf("no scenario %q", name)
	return scenario{}
}

// Each Context holds what its name says, or the checks that rest on it
// would pass any policy.
func TestScenariosHoldWhatTheySay(t *testing.T) {
	has := func(name string, what string, ok func(c *pruneguard.Context, hide []pruneguard.UnitID) bool) {
		t.Helper()
		c, hide := scenarioNamed(t, name).build()
		if !ok(c, hide) {
			t.Errorf("%s: %s", name, what)
		}
	}
	anyUnit := func(c *pruneguard.Context, f func(pruneguard.Unit) bool) bool {
		return slices.ContainsFunc(c.Units(), f)
	}

	has("empty", "holds nothing", func(c *pruneguard.Context, _ []pruneguard.UnitID) bool { return c.Len() == 0 })
	has("pinned", "pins the unit of the largest result and units after it", func(c *pruneguard.Context, _ []pruneguard.UnitID) bool {
		u, _ := c.UnitOf(largestResultAny(c))
		return u.Pinned && len(slices.DeleteFunc(c.Units(), func(u pruneguard.Unit) bool { return !u.Pinned })) > 20
	})
	has("in flight", "holds a pending call, a batch answered in part, a result and the model's message streaming",
		func(c *pruneguard.Context, _ []pruneguard.UnitID) bool {
			return c.Config().Boundary == pruneguard.BoundaryRelaxed && len(c.Pending()) >= 3 && len(c.OpenMessages()) == 2 &&
				anyUnit(c, func(u pruneguard.Unit) bool { return len(u.Pending) == 1 && len(u.Messages) == 3 })
		})
	has("unread", "holds results and a user message after the model's last message", func(c *pruneguard.Context, _ []pruneguard.UnitID) bool {
		return len(c.Unread()) == 4 && anyUnit(c, func(u pruneguard.Unit) bool { return u.Unread && u.Tokens > 27000 })
	})
	has("stubbed", "holds stubbed and whole results", func(c *pruneguard.Context, _ []pruneguard.UnitID) bool {
		stubbed, whole := 0, 0
		for _, e := range c.Snapshot() {
			if e.Result && e.Stubbed {
				stubbed++
			} else if e.Result {
				whole++
			}
		}
		return stubbed > 20 && whole > 20
	})
	has("hidden", "hides units that may go, the largest result's among them", func(c *pruneguard.Context, hide []pruneguard.UnitID) bool {
		v := c.View()
		v.Hide(hide...)
		n := 0
		for range v.Units() {
			n++
		}
		return len(hide) > 20 && n == len(c.Units())-len(hide) && slices.Contains(hide, unitOf(c, largestResult(c)))
	})
	has("refused", "remembers units refused eviction and results refused a stub", func(c *pruneguard.Context, _ []pruneguard.UnitID) bool {
		v := c.View()
		hidden := slices.ContainsFunc(c.Units(), func(u pruneguard.Unit) bool { return v.Hidden(u.ID) && mayGo(u) })
		whole := 0
		for range v.WholeResults() {
			whole++
		}
		results := 0
		for _, e := range c.Snapshot() {
			if e.Result && !e.Stubbed {
				results++
			}
		}
		return hidden && whole < results && len(c.Refusals()) > 20
	})
	has("coupled", "couples an old result with a late user message", func(c *pruneguard.Context, _ []pruneguard.UnitID) bool {
		return anyUnit(c, func(u pruneguard.Unit) bool {
			return len(u.Messages) == 3 && u.Messages[2][0] == 'u' && mayGo(u)
		})
	})
	if n := largeContext().Len(); n < 100_000 {
		t.Errorf("the large Context holds %d messages", n)
	}
	if n := smallContext().Len(); n < 1000 || n > 1100 {
		t.Errorf("the small Context holds %d messages", n)
	}
}

// largestResultAny is largestResult counting stubbed results too.
func largestResultAny(c *pruneguard.Context) pruneguard.MessageID {
	var best pruneguard.Entry
	for _, e := range c.Snapshot() {
		if e.Result && e.Tokens > best.Tokens {
			best = e
		}
	}
	return best.ID
}

// Two builds of a scenario are equal Contexts, as the check of
// determinism needs.
func TestScenariosRepeat(t *testing.T) {
	for _, sc := range scenarios {
		c1, h1 := sc.build()
		c2, h2 := sc.build()
		if !reflect.DeepEqual(c1.Snapshot(), c2.Snapshot()) || !slices.Equal(h1, h2) || len(c1.Refusals()) != len(c2.Refusals()) {
			t.Errorf("%s: two builds differ", sc.name)
		}
	}
}
