package policytest_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/policytest"
)

// combined stubs the largest results first and evicts the oldest units
// once none is worth stubbing, as the README's example does.
var combined = pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan {
	p := pruneguard.LargestResultsFirst{Stub: true}.Propose(v, need)
	if p.Empty() {
		p = pruneguard.OldestFirst{Keep: 4}.Propose(v, need)
	}
	return p
})

// The built-in policies meet every requirement, and draw only the
// warnings their docs announce.
func TestBuiltins(t *testing.T) {
	for _, tc := range []struct {
		name string
		pol  pruneguard.Policy
		// warns are the warnings the policy draws on purpose.
		warns []error
	}{
		{"OldestFirst", pruneguard.OldestFirst{}, nil},
		{"OldestFirst_Keep", pruneguard.OldestFirst{Keep: 6}, nil},
		{"LargestResultsFirst", pruneguard.LargestResultsFirst{}, nil},
		{"LargestResultsFirst_Stub", pruneguard.LargestResultsFirst{Stub: true}, nil},
		{"LargestResultsFirst_MinTokens", pruneguard.LargestResultsFirst{Stub: true, MinTokens: 100}, nil},
		// It clears every tool use older than the kept ones, whatever
		// the need.
		{"KeepLastToolUses", pruneguard.KeepLastToolUses{}, []error{policytest.ErrOvershoot}},
		{"KeepLastToolUses_Stub", pruneguard.KeepLastToolUses{Keep: 2, Stub: true}, []error{policytest.ErrOvershoot}},
		// It never clears a unit holding a search result: in the
		// parallel batches every unit holds one.
		{"KeepLastToolUses_Exclude", pruneguard.KeepLastToolUses{Exclude: []string{"search"}}, []error{policytest.ErrOvershoot, policytest.ErrIdle}},
		{"KeepLastToolUses_ExcludeStub", pruneguard.KeepLastToolUses{Keep: 5, Exclude: []string{"search"}, Stub: true}, []error{policytest.ErrOvershoot}},
		{"ViewFunc", combined, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range policytest.Findings(func() pruneguard.Policy { return tc.pol }) {
				if !f.Warning || !slices.Contains(tc.warns, f.Err) {
					t.Error(f)
				}
			}
		})
	}
}

// Run reports each Context as a subtest, and fails none for a policy
// that meets every requirement.
func TestRun(t *testing.T) {
	policytest.Run(t, func(*testing.T) pruneguard.Policy { return pruneguard.OldestFirst{Keep: 2} })
}

// evictEntries is a policy that evicts, oldest first until need, the
// messages of its snapshot that keep says to.
func evictEntries(keep func(pruneguard.Entry) bool) pruneguard.Policy {
	return pruneguard.PolicyFunc(func(es []pruneguard.Entry, need int) pruneguard.Plan {
		var p pruneguard.Plan
		for _, e := range es {
			if need <= 0 {
				break
			}
			if keep(e) {
				p.Evict = append(p.Evict, e.ID)
				need -= e.Tokens
			}
		}
		return p
	})
}

// found returns the checks of the findings, requirements and warnings
// apart, each once, in the order found.
func found(fs []*policytest.Finding) (reqs, warns []error) {
	for _, f := range fs {
		if f.Warning && !slices.Contains(warns, f.Err) {
			warns = append(warns, f.Err)
		}
		if !f.Warning && !slices.Contains(reqs, f.Err) {
			reqs = append(reqs, f.Err)
		}
	}
	return reqs, warns
}

// A badPolicy breaks the requirements reqs and draws the warnings
// warns.
type badPolicy struct {
	name        string
	pol         func() pruneguard.Policy
	reqs, warns []error
}

// badPolicies are policies each check catches, with what else they
// break.
var badPolicies = []badPolicy{
	{"unknown message", func() pruneguard.Policy {
		return pruneguard.ViewFunc(func(*pruneguard.View, int) pruneguard.Plan {
			return pruneguard.Plan{Evict: []pruneguard.MessageID{"no such message"}}
		})
	}, []error{policytest.ErrUnknown}, nil},
	{"unknown tool", func() pruneguard.Policy {
		return pruneguard.ViewFunc(func(*pruneguard.View, int) pruneguard.Plan {
			return pruneguard.Plan{DropSchemas: []string{"no such tool"}}
		})
	}, []error{policytest.ErrUnknown}, nil},
	{"stub of a user message", func() pruneguard.Policy {
		return pruneguard.PolicyFunc(func(es []pruneguard.Entry, _ int) pruneguard.Plan {
			for _, e := range es {
				if e.Role == pruneguard.RoleUser && !e.Unread && !e.Pinned {
					return pruneguard.Plan{Stub: []pruneguard.MessageID{e.ID}}
				}
			}
			return pruneguard.Plan{}
		})
	}, []error{policytest.ErrNotResult}, []error{policytest.ErrIdle, policytest.ErrCost}},
	// The guard applies no stub of a result stubbed already and goes on
	// to reach its budget, so the policy is caught for the stub alone.
	{"stub of a stubbed result", func() pruneguard.Policy {
		return pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan {
			var p pruneguard.Plan
			for e := range v.Results() {
				if e.Stubbed {
					p.Stub = append(p.Stub, e.ID)
				}
			}
			if p.Empty() {
				return pruneguard.OldestFirst{}.Propose(v, need)
			}
			return p
		})
	}, []error{policytest.ErrStubbed}, []error{policytest.ErrCost}},
	{"pinned", func() pruneguard.Policy { return evictEntries(func(e pruneguard.Entry) bool { return e.Pinned }) },
		[]error{policytest.ErrPinned}, []error{policytest.ErrOvershoot, policytest.ErrCost}},
	// A relaxed guard goes on past a plan naming only units in flight,
	// so the policy does not keep it from its budget.
	{"in flight", func() pruneguard.Policy {
		return evictEntries(func(e pruneguard.Entry) bool { return e.Pending || e.Open })
	}, []error{policytest.ErrInFlight}, []error{policytest.ErrIdle, policytest.ErrCost}},
	{"unread", func() pruneguard.Policy { return evictEntries(func(e pruneguard.Entry) bool { return e.Unread }) },
		[]error{policytest.ErrUnread}, []error{policytest.ErrIdle, policytest.ErrCost}},
	{"hidden, evicted", func() pruneguard.Policy { return resultsWalker(false) }, []error{policytest.ErrHidden}, nil},
	// The walk of all results yields results remembered as refused a
	// stub: a warning, for a snapshot cannot tell them either.
	{"refused a stub", func() pruneguard.Policy { return resultsWalker(true) }, nil, []error{policytest.ErrStubRefused}},
	{"hidden by itself", func() pruneguard.Policy {
		return pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan {
			var p pruneguard.Plan
			for e := range v.Largest() {
				if need <= 0 {
					break
				}
				if u, ok := v.Unit(e.Unit); ok && !u.Pinned && !u.Unread && !u.Open && len(u.Pending) == 0 {
					p.Stub = append(p.Stub, e.ID)
					need -= e.Tokens
					v.Hide(u.ID)
				}
			}
			return p
		})
	}, []error{policytest.ErrHidden}, nil},
	// It proposes what it proposed first, whatever the guard pruned
	// since (what the gates refuse, a guard without a store hides before
	// the first ask).
	{"caching", func() pruneguard.Policy {
		var first *pruneguard.Plan
		return pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan {
			if first == nil {
				p := pruneguard.OldestFirst{}.Propose(v, need)
				first = &p
			}
			return *first
		})
	}, []error{policytest.ErrUnknown}, nil},
	{"keeper", func() pruneguard.Policy { return forgetful{} }, []error{policytest.ErrKept}, nil},
	{"unstable", func() pruneguard.Policy {
		n := 0
		return pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan {
			if n++; n%2 == 0 {
				return pruneguard.LargestResultsFirst{}.Propose(v, need)
			}
			return pruneguard.OldestFirst{}.Propose(v, need)
		})
	}, []error{policytest.ErrUnstable}, nil},
	{"panic", func() pruneguard.Policy {
		return pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan { panic("no plan") })
	}, []error{policytest.ErrPanic}, nil},
	{"one unit a round", func() pruneguard.Policy {
		return pruneguard.ViewFunc(func(v *pruneguard.View, _ int) pruneguard.Plan { return pruneguard.OldestFirst{}.Propose(v, 1) })
	}, []error{policytest.ErrStalls}, nil},
	{"nothing", func() pruneguard.Policy {
		return pruneguard.ViewFunc(func(*pruneguard.View, int) pruneguard.Plan { return pruneguard.Plan{} })
	}, nil, []error{policytest.ErrIdle}},
	{"everything", func() pruneguard.Policy {
		return pruneguard.ViewFunc(func(v *pruneguard.View, _ int) pruneguard.Plan {
			return pruneguard.OldestFirst{}.Propose(v, math.MaxInt)
		})
	}, nil, []error{policytest.ErrOvershoot}},
	{"snapshot", func() pruneguard.Policy { return snapshotOldest }, nil, []error{policytest.ErrCost}},
}

// Each check catches the policy that breaks it, and only that one: a
// policy that breaks one requirement is not reported for others.
func TestChecksCatch(t *testing.T) {
	for _, tc := range badPolicies {
		t.Run(tc.name, func(t *testing.T) {
			fs := policytest.Findings(tc.pol)
			reqs, warns := found(fs)
			if !sameSet(reqs, tc.reqs) || !sameSet(warns, tc.warns) {
				t.Errorf("found requirements %v and warnings %v, want %v and %v", reqs, warns, tc.reqs, tc.warns)
				for _, f := range fs {
					t.Log(f)
				}
			}
		})
	}
}

func sameSet(a, b []error) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(e error) bool { return !slices.Contains(b, e) })
}

// resultsWalker walks the View's results, newest first, and evicts the
// units that may go, or stubs the results not yet stubbed in them, but
// never asks whether the View hides them: the walk of all results does
// not pass over what a guard remembers it was refused.
func resultsWalker(stub bool) pruneguard.Policy {
	return pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan {
		var p pruneguard.Plan
		for e := range v.Results() {
			if need <= 0 {
				break
			}
			u, ok := v.Unit(e.Unit)
			if !ok || u.Pinned || u.Open || u.Unread || len(u.Pending) > 0 {
				continue
			}
			switch {
			case stub && !e.Stubbed && e.Tokens > 50:
				p.Stub = append(p.Stub, e.ID)
				need -= e.Tokens
			case !stub && !slices.Contains(p.Evict, u.Messages[0]):
				p.Evict = append(p.Evict, u.Messages...)
				need -= u.Tokens
			}
		}
		return p
	})
}

// forgetful keeps the last five messages by its Kept, but proposes from
// the oldest on as if it kept nothing.
type forgetful struct{}

func (forgetful) Kept(v *pruneguard.View) (pruneguard.MessageID, bool) {
	return pruneguard.OldestFirst{Keep: 5}.Kept(v)
}

func (forgetful) Propose(v *pruneguard.View, need int) pruneguard.Plan {
	return pruneguard.OldestFirst{}.Propose(v, need)
}

// snapshotOldest is OldestFirst from a snapshot: right, and costly.
var snapshotOldest = pruneguard.PolicyFunc(func(es []pruneguard.Entry, need int) pruneguard.Plan {
	held := map[pruneguard.UnitID]bool{}
	for _, e := range es {
		if e.Pinned || e.Open || e.Pending || e.Unread {
			held[e.Unit] = true
		}
	}
	var p pruneguard.Plan
	freed, last := 0, pruneguard.UnitID("")
	for _, e := range es {
		if held[e.Unit] {
			continue
		}
		if e.Unit != last && freed >= need {
			break
		}
		p.Evict = append(p.Evict, e.ID)
		freed += e.Tokens
		last = e.Unit
	}
	return p
})

// careless proposes the oldest units though its Kept says it keeps the
// last four messages, the pinned messages, and a stub of the user's
// first message.
type careless struct{}

func (careless) Kept(v *pruneguard.View) (pruneguard.MessageID, bool) {
	return pruneguard.OldestFirst{Keep: 4}.Kept(v)
}

func (careless) Propose(v *pruneguard.View, need int) pruneguard.Plan {
	p := pruneguard.OldestFirst{}.Propose(v, need)
	for _, e := range v.Snapshot() {
		if e.Pinned {
			p.Evict = append(p.Evict, e.ID)
		}
		if e.Role == pruneguard.RoleUser && len(p.Stub) == 0 {
			p.Stub = append(p.Stub, e.ID)
		}
	}
	return p
}

// A policy that breaks three requirements fails each, and each failure
// names the messages at fault.
func TestBadPolicy(t *testing.T) {
	err := policytest.TestPolicy(func() pruneguard.Policy { return careless{} })
	for _, want := range []error{policytest.ErrPinned, policytest.ErrKept, policytest.ErrNotResult} {
		if !errors.Is(err, want) {
			t.Errorf("the error does not match %v", want)
		}
	}
	fs := policytest.Findings(func() pruneguard.Policy { return careless{} })
	reqs, _ := found(fs)
	if want := []error{policytest.ErrNotResult, policytest.ErrPinned, policytest.ErrKept}; !sameSet(reqs, want) {
		t.Errorf("found %v, want %v", reqs, want)
	}
	// In the tool loop: sys1 is the pinned system prompt, u2 the user's
	// first message, and the last four messages are a call, its result,
	// and the model's last two messages.
	var named []string
	for _, f := range fs {
		if f.Case == "tool loop" && f.Need > 1_000_000 {
			named = append(named, fmt.Sprint(f.Err, " ", f.Messages))
		}
	}
	want := []string{
		fmt.Sprint(policytest.ErrNotResult, " [u2]"),
		fmt.Sprint(policytest.ErrPinned, " [sys1]"),
	}
	if len(named) != 3 || !slices.Equal(named[:2], want) || !strings.HasPrefix(named[2], policytest.ErrKept.Error()) {
		t.Errorf("the findings name %q", named)
	}
	if err == nil || !strings.Contains(err.Error(), `case "tool loop"`) {
		t.Errorf("the error does not say where: %v", err)
	}
}

// Suites may run at once: they share only what policies read.
func TestConcurrentSuites(t *testing.T) {
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = policytest.TestPolicy(func() pruneguard.Policy { return pruneguard.LargestResultsFirst{Stub: i%2 == 0} })
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}
