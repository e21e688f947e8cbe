package pruneguard_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pruneguard/pruneguard"
)

// A plan that all three gates refuse. The PruneError holds every
// violation; errors.Is matches each gate's sentinel and errors.As finds
// the violations with their codes and ids.
func ExamplePruneError() {
	// This runtime cannot insert tombstones.
	c := pruneguard.NewContext(pruneguard.Config{NoTombstones: true})
	c.RegisterTool(pruneguard.Tool{
		Name:        "update_incident",
		Schema:      json.RawMessage(`{"type":"object","required":["severity","notify"]}`),
		Annotations: pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(false)},
	})
	c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 500, Pinned: true})
	c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Tokens: 40, Calls: []pruneguard.Call{
		{ID: "t1", Tool: "update_incident", Args: json.RawMessage(`{"severity":"SEV-2","notify":true}`)},
	}})
	c.Append(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Tokens: 10, Answers: []pruneguard.CallID{"t1"}, Class: pruneguard.Reconstructible})
	c.Append(pruneguard.Message{ID: "think", Role: pruneguard.RoleReasoning, Tokens: 80, Facts: pruneguard.NegativeResult,
		Content: []byte("ulimit is unlimited, so the OOM is not from the shell")})

	_, err := c.Prune(pruneguard.Plan{
		Evict:       []pruneguard.MessageID{"sys", "think"},
		DropSchemas: []string{"update_incident"},
		Split:       pruneguard.SplitStrict,
	})

	var pe *pruneguard.PruneError
	if errors.As(err, &pe) {
		for _, v := range pe.Violations {
			fmt.Printf("gate=%s code=%s units=%v messages=%v calls=%v tools=%v\n", v.Gate, v.Code, v.Units, v.Messages, v.Calls, v.Tools)
		}
	}
	fmt.Println("boundary:", errors.Is(err, pruneguard.ErrBoundary))
	fmt.Println("schema:  ", errors.Is(err, pruneguard.ErrSchema))
	fmt.Println("regen:   ", errors.Is(err, pruneguard.ErrRegen))
	fmt.Println("deferred:", errors.Is(err, pruneguard.ErrDeferred))

	// errors.As with a *Violation finds the first one.
	var v *pruneguard.Violation
	if errors.As(err, &v) {
		fmt.Println("first:", v)
	}
	// Output:
	// gate=boundary code=pinned units=[sys] messages=[sys] calls=[] tools=[]
	// gate=schema code=ghost-tool units=[] messages=[] calls=[t1] tools=[update_incident]
	// gate=regen code=negative-result units=[think] messages=[think] calls=[] tools=[]
	// boundary: true
	// schema:   true
	// regen:    true
	// deferred: false
	// first: pruneguard: boundary gate: pinned unit sys messages sys
}
