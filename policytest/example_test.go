package policytest_test

import (
	"errors"
	"fmt"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/policytest"
)

// Check a policy outside of a test, or from TestMain.
func ExampleTestPolicy() {
	err := policytest.TestPolicy(func() pruneguard.Policy { return pruneguard.OldestFirst{Keep: 4} })
	fmt.Println(err)
	// Output: <nil>
}

// A policy that evicts the largest tool results first, whatever units
// hold them, breaks several requirements; the error matches each.
func ExampleTestPolicy_failure() {
	largest := pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan {
		var p pruneguard.Plan
		for e := range v.Largest() {
			if need <= 0 {
				break
			}
			p.Evict = append(p.Evict, e.ID)
			need -= e.Tokens
		}
		return p
	})
	err := policytest.TestPolicy(func() pruneguard.Policy { return largest })
	for _, check := range []error{policytest.ErrPinned, policytest.ErrInFlight, policytest.ErrUnread, policytest.ErrHidden, policytest.ErrStubbed} {
		fmt.Printf("%v: %v\n", check, errors.Is(err, check))
	}
	// Output:
	// policytest: names a pinned unit: true
	// policytest: names a unit in flight: true
	// policytest: names a unit the model has not read: true
	// policytest: names what the View hides: true
	// policytest: stubs a result already stubbed: false
}

// Findings returns the warnings too: KeepLastToolUses clears every tool
// use older than the kept ones, whatever the need.
func ExampleFindings() {
	seen := map[error]bool{}
	for _, f := range policytest.Findings(func() pruneguard.Policy { return pruneguard.KeepLastToolUses{} }) {
		if !seen[f.Err] {
			seen[f.Err] = true
			fmt.Println(f.Err, f.Warning)
		}
	}
	// Output:
	// policytest: proposes more than asked true
}
