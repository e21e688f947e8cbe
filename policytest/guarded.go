package policytest

import (
	"errors"
	"fmt"

	"github.com/pruneguard/pruneguard"
)

// The policy behind a Guard: the check must end where the guard alone
// would, since the guard's rounds are bounded and a policy's plans spend
// them.

// underGuard checks a Context of the scenario behind a Guard whose budget
// asks for a quarter of it, with the policy and with one that proposes
// nothing. When the guard alone reaches the budget, so must the guard
// with the policy, unless the policy hid units through its View.
func (sc scenario) underGuard(newPolicy func() pruneguard.Policy) []*Finding {
	c, _ := sc.build()
	budget := c.Tokens() - c.Tokens()/4
	r := &report{name: sc.name + " behind a guard", need: c.Tokens() - budget}
	alone := pruneguard.Guard{Budget: budget, Policy: pruneguard.ViewFunc(func(*pruneguard.View, int) pruneguard.Plan { return pruneguard.Plan{} })}
	ref, err := alone.Check(c)
	if err != nil || ref.After > budget {
		return nil // the guard alone cannot: nothing to compare with
	}

	c, _ = sc.build()
	pol, hid, asked := newPolicy(), false, 0
	seen := map[error]bool{}
	watched := pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan {
		asked++
		before := hiddenUnits(c, v)
		each := &report{name: r.name, need: need}
		kept, keeps, _ := each.kept(pol, v)
		p := pol.Propose(v, need)
		hid = hid || hiddenUnits(c, v) != before
		// Every plan is checked as the first is: the View now hides
		// what the gates refused in this check.
		each.plan(newIndex(c), v, p, kept, keeps)
		for _, f := range each.out {
			if !seen[f.Err] {
				seen[f.Err] = true
				f.Detail = fmt.Sprintf("ask %d: %s", asked, f.Detail)
				r.out = append(r.out, f)
			}
		}
		return p
	})
	res, err := func() (res pruneguard.Result, err error) {
		defer func() {
			if e := recover(); e != nil {
				err = fmt.Errorf("%w: %v", ErrPanic, e)
			}
		}()
		return pruneguard.Guard{Budget: budget, Policy: watched, Screen: refuseFirst()}.Check(c)
	}()
	switch {
	case errors.Is(err, ErrPanic):
		r.add(ErrPanic, false, nil, "the guard's check: %v", err)
	case isInput(err):
		if !seen[ErrUnknown] && !seen[ErrNotResult] {
			r.add(ErrUnknown, false, nil, "the guard's check, after %d asks: %v", asked, err)
		}
	case res.After > budget && !hid:
		r.add(ErrStalls, false, nil, "the check ended %s at %d tokens, over its budget of %d, after %d asks and %d decisions applied; the guard alone reaches %d",
			res.Outcome, res.After, budget, asked, len(res.Decisions), ref.After)
	}
	return r.out
}

// refuseFirst returns a Screen that refuses the first unit of the first
// decision that evicts one, once: the guard hides it and asks again, so
// that a policy is asked a second time in the check however much its
// first plan frees, and a plan made before is checked against what the
// guard learned since.
func refuseFirst() pruneguard.Screen {
	done := false
	return pruneguard.ScreenFunc(func(d *pruneguard.Decision) []*pruneguard.Violation {
		if done || len(d.Units) == 0 {
			return nil
		}
		done = true
		return []*pruneguard.Violation{{Gate: pruneguard.GateScreen, Code: "policytest-once", Units: d.Units[:1]}}
	})
}

// hiddenUnits counts the units of c the View hides.
func hiddenUnits(c *pruneguard.Context, v *pruneguard.View) int {
	n := 0
	for _, u := range c.Units() {
		if v.Hidden(u.ID) {
			n++
		}
	}
	return n
}
