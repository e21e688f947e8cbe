package pruneguard_test

import (
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
)

// oneUnit proposes the oldest unit it sees and nothing more.
type oneUnit struct{}

func (oneUnit) Propose(v *pruneguard.View, need int) pruneguard.Plan {
	for u := range v.Units() {
		return pruneguard.Plan{Evict: u.Messages}
	}
	return pruneguard.Plan{}
}

// A check that ends Pruned but over its budget always says why, even
// when nothing it met refused and nothing is pinned: the policy stopped
// short.
func TestPrunedOverBudgetHasReason(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{})
	for i := range 6 {
		role := pruneguard.RoleUser
		if i%2 == 1 {
			role = pruneguard.RoleAssistant
		}
		if err := c.Append(pruneguard.Message{ID: pruneguard.MessageID("m" + strings.Repeat("x", i)), Role: role, Content: []byte(strings.Repeat("word ", 50)), Tokens: 100, Class: pruneguard.Reconstructible}); err != nil {
			t.Fatal(err)
		}
	}
	g := pruneguard.Guard{Budget: 250, Policy: oneUnit{}, Rounds: 1}
	res, err := g.Check(c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != pruneguard.Pruned || res.After <= 250 {
		t.Fatalf("scenario: outcome %v after %d: %v %v", res.Outcome, res.After, res.Reason, res.Refused)
	}
	if res.Reason == nil {
		t.Fatalf("pruned to %d over a budget of 250 with no reason; held %v", res.After, res.Held)
	}
}
