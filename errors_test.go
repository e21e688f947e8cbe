package pruneguard

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestErrorTexts(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&InputError{Op: "append", ID: "m1", Err: ErrDuplicateMessage}, `pruneguard: append "m1": duplicate message id`},
		{&InputError{Op: "append", Err: ErrEmptyID}, `pruneguard: append: empty id`},
		{&Violation{Gate: GateBoundary, Code: CodeSplit}, `pruneguard: boundary gate: split-unit`},
		{&Violation{Gate: GateRegen, Code: CodeReferenced, Units: []UnitID{"u1", "u2"}, Messages: []MessageID{"m"}, Calls: []CallID{"c"}, Tools: []string{"t"}, Steps: []StepID{"s"}},
			`pruneguard: regen gate: referenced unit u1,u2 messages m calls c tools t steps s`},
		{&PruneError{Violations: []*Violation{{Gate: GateSchema, Code: CodeGhostTool, Tools: []string{"t"}}}},
			`pruneguard: prune refused (1 violation): schema gate: ghost-tool tools t`},
		{&PruneError{Violations: []*Violation{{Gate: GateSchema, Code: CodeGhostTool}, {Gate: GateRegen, Code: CodeSecret}}},
			`pruneguard: prune refused (2 violations): schema gate: ghost-tool; regen gate: one-time-secret`},
		{&DeferredError{}, `pruneguard: prune deferred:`},
		{&DeferredError{Pending: []CallID{"c1", "c2"}, Open: []MessageID{"s"}, Units: []UnitID{"u"}},
			`pruneguard: prune deferred: pending calls c1,c2 open messages s units in flight u`},
		{&CeilingError{Tokens: 10, Ceiling: 5}, `pruneguard: hard ceiling exceeded: 10 tokens, ceiling 5`},
		{&CeilingError{Tokens: 10, Ceiling: 5, Cause: &DeferredError{Pending: []CallID{"c"}}},
			`pruneguard: hard ceiling exceeded: 10 tokens, ceiling 5: prune deferred: pending calls c`},
		{&StaleError{Reason: "why"}, `pruneguard: stale decision: why`},
		{&StaleError{Reason: "why", Units: []UnitID{"a", "b"}}, `pruneguard: stale decision: why: units a,b`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.err.Error())
	}
}

func TestErrorMatching(t *testing.T) {
	ie := &InputError{Op: "x", Err: ErrUnknownCall}
	assert.ErrorIs(t, ie, ErrInvalidInput)
	assert.ErrorIs(t, ie, ErrUnknownCall)
	assert.NotErrorIs(t, ie, ErrDuplicateResult)
	assert.False(t, ie.Is(ErrUnknownCall), "the specific sentinel is matched through Unwrap")

	ce := &CeilingError{Cause: &PruneError{Violations: []*Violation{{Gate: GateRegen}}}}
	assert.ErrorIs(t, ce, ErrCeiling)
	assert.ErrorIs(t, ce, ErrRegen)
	assert.NotErrorIs(t, ce, ErrDeferred)
	assert.Equal(t, []error{ErrCeiling}, (&CeilingError{}).Unwrap())

	assert.ErrorIs(t, &StaleError{}, ErrStaleDecision)
	assert.ErrorIs(t, &DeferredError{}, ErrDeferred)
	for _, g := range []Gate{GateBoundary, GateSchema, GateRegen} {
		v := &Violation{Gate: g}
		assert.ErrorIs(t, v, g.sentinel())
		for _, other := range []Gate{GateBoundary, GateSchema, GateRegen} {
			if other != g {
				assert.False(t, errors.Is(v, other.sentinel()))
			}
		}
	}
}
