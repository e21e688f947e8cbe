package pruneguard

import (
	"errors"
	"slices"
)

// Outcome is the answer of [Guard.Check].
type Outcome uint8

const (
	// UnderBudget: nothing needed doing.
	UnderBudget Outcome = iota
	// Pruned: decisions were applied. Result.After may still exceed the
	// budget when the guard refused the rest; it is under the ceiling.
	Pruned
	// Deferred: the Context could not be pruned safely now (a call
	// pending, a message streaming, or every proposal refused) and is
	// still under its hard ceiling. Retry at the next budget check.
	Deferred
)

// String returns the name of the outcome.
func (o Outcome) String() string {
	switch o {
	case UnderBudget:
		return "under_budget"
	case Pruned:
		return "pruned"
	case Deferred:
		return "deferred"
	}
	return "outcome(?)"
}

// Guard is the helper a runtime calls before each model invocation: it
// checks the budget and, when over it, lets Policy propose and the gates
// dispose until the Context fits or nothing more can safely go.
//
// A Guard is a plain value; it may be shared by goroutines as long as its
// Policy may.
type Guard struct {
	// Budget is the token count to prune down to.
	Budget int
	// Ceiling, when positive, is the hard limit: above it a Context that
	// cannot be pruned safely makes Check fail with a [*CeilingError].
	// Zero means the Context's Config.Ceiling.
	Ceiling int
	// Policy proposes what to prune; nil means OldestFirst{}.
	Policy Policy
	// Split is passed on in every plan that leaves it unset.
	Split SplitMode
	// Rounds bounds the propose-refuse cycles of one Check (default 64).
	// Each round either applies a decision or hides at least one refused
	// unit from the policy, so the bound only stops a policy that keeps
	// proposing what changes nothing.
	Rounds int
}

// Result reports what [Guard.Check] did.
type Result struct {
	Outcome Outcome
	Before  int // tokens before the check
	After   int // tokens after it
	// Decisions are the applied decisions, in order.
	Decisions []*Decision
	// Refused lists every refusal met on the way, once each, in the order
	// met: units held back by the boundary, irreducible content, schemas a
	// mutation tool could not lose. It explains a Deferred outcome or a
	// Pruned one still over budget.
	Refused []*Violation
	// Reason is the last error met (a *DeferredError, *PruneError or
	// *StaleError), if any.
	Reason error
}

// refuse records vs in r.Refused, skipping those already there.
func (r *Result) refuse(vs []*Violation) {
	for _, v := range vs {
		if !slices.ContainsFunc(r.Refused, v.same) {
			r.Refused = append(r.Refused, v)
		}
	}
}

// Check brings c under g.Budget if it safely can. Under budget it returns
// at once, in constant time and without allocating. Otherwise it asks
// the policy for a plan, prunes and applies it; units and tools the gates
// refuse are hidden from the policy (through its [View]) and it is asked
// again, up to Rounds times. Beside the policy's own work, a check costs
// in proportion to what it proposes, prunes and refuses, not to the
// length of the Context. It fails with a [*CeilingError] when c ends above
// a positive Ceiling, and with the [*InputError] when the policy proposes
// ids or tools the Context does not hold.
func (g Guard) Check(c *Context) (Result, error) {
	before := c.Tokens()
	if before <= g.Budget {
		return Result{Outcome: UnderBudget, Before: before, After: before}, nil
	}
	pol := g.Policy
	if pol == nil {
		pol = OldestFirst{}
	}
	cfg := c.Config()
	if g.Ceiling <= 0 {
		g.Ceiling = cfg.Ceiling
	}
	rounds := g.Rounds
	if rounds <= 0 {
		rounds = 64
	}
	res := Result{Before: before}
	v := &View{c: c}
	var refusedTools map[string]bool
	refuse := func(vs []*Violation) {
		res.refuse(vs)
		for _, x := range vs {
			v.Hide(x.Units...)
			if x.Gate == GateSchema && len(x.Tools) > 0 {
				if refusedTools == nil {
					refusedTools = make(map[string]bool)
				}
				for _, t := range x.Tools {
					refusedTools[t] = true
				}
			}
		}
	}
	if cfg.Boundary == BoundaryStrict && !c.Settled() {
		// Nothing may go while a call is pending or a stream is open; say
		// which, without asking the policy.
		if _, err := c.prune(Plan{}, false); err != nil {
			res.Reason = err
			rounds = 0
		}
	}
	for i := 0; i < rounds; i++ {
		now := c.Tokens()
		if now <= g.Budget {
			break
		}
		v.arm()
		p := withoutTools(pol.Propose(v, now-g.Budget), refusedTools)
		if p.Split == SplitGrow {
			p.Split = g.Split
		}
		if p.Empty() {
			break
		}
		d, err := c.prune(p, false)
		for retry := 0; err != nil && retry < 4; retry++ {
			// Take the refused units and tools out of the plan and try
			// what is left, without asking the policy again.
			var pe *PruneError
			if !errors.As(err, &pe) {
				break
			}
			res.Reason = err
			refuse(pe.Violations)
			p = withoutTools(c.withoutUnits(p, v.hidden), refusedTools)
			if p.Empty() {
				break
			}
			d, err = c.prune(p, false)
		}
		if err != nil {
			res.Reason = err
			var ie *InputError
			if errors.As(err, &ie) && v.changed() {
				// Another goroutine changed the Context after the policy
				// looked: look again.
				continue
			}
			if errors.Is(err, ErrInvalidInput) {
				// The policy named what the Context does not hold.
				res.After = c.Tokens()
				res.Outcome = Deferred
				if len(res.Decisions) > 0 {
					res.Outcome = Pruned
				}
				return res, err
			}
			var pe *PruneError
			if !errors.As(err, &pe) {
				break // deferred
			}
			refuse(pe.Violations)
			continue
		}
		refuse(d.Refused)
		if len(d.Refused) > 0 {
			res.Reason = &PruneError{Violations: d.Refused}
		}
		if d.Empty() {
			continue
		}
		if err := c.Apply(d); err != nil {
			res.Reason = err
			continue
		}
		res.Decisions = append(res.Decisions, d)
	}
	res.After = c.Tokens()
	switch {
	case res.After <= g.Budget:
		res.Outcome = Pruned
	case g.Ceiling > 0 && res.After > g.Ceiling:
		res.Outcome = Deferred
		if len(res.Decisions) > 0 {
			res.Outcome = Pruned
		}
		return res, &CeilingError{Tokens: res.After, Ceiling: g.Ceiling, Cause: res.Reason}
	case len(res.Decisions) > 0:
		res.Outcome = Pruned
	default:
		res.Outcome = Deferred
		if res.Reason == nil && !c.Settled() {
			res.Reason = &DeferredError{Pending: c.Pending(), Open: c.OpenMessages()}
		}
	}
	return res, nil
}
