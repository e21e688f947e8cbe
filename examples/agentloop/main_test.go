package main

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParallelBatch(t *testing.T) {
	t.Run("unguarded", func(t *testing.T) {
		o := parallelBatch(false)
		var pe *providerError
		require.True(t, errors.As(o.Provider, &pe), "the provider must reject the request")
		assert.Equal(t, []pruneguard.CallID{"c1", "c2", "c3"}, o.Orphans)
		assert.Contains(t, pe.Error(), "unexpected `tool_use_id` found in `tool_result` blocks")
		assert.Contains(t, pe.OpenAI(), "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'")
		assert.Equal(t, 2, o.ReadFileRuns, "the retry re-runs the side-effectful read")
		assert.NotEmpty(t, o.Failure())
	})
	t.Run("guarded", func(t *testing.T) {
		o := parallelBatch(true)
		assert.NoError(t, o.Provider)
		assert.Empty(t, o.Orphans)
		assert.Equal(t, 1, o.ReadFileRuns)
		assert.Equal(t, [][]pruneguard.CallID{{"c2", "c3"}, {"c3"}}, o.Deferred, "deferred after r1 and r2 with the pending calls")
		// After r3 the batch is settled but unread: it stays for the
		// request that shows it. The user's question is irreducible: it
		// stays too.
		require.Len(t, o.checks, 4)
		assert.True(t, slices.ContainsFunc(o.checks[2].Result.Refused, func(v *pruneguard.Violation) bool {
			return v.Code == pruneguard.CodeUnread && slices.Equal(v.Units, []pruneguard.UnitID{"a1"})
		}), "after r3: %v", o.checks[2].Result.Refused)
		assert.Empty(t, o.checks[2].Result.Decisions)
		assert.Equal(t, []pruneguard.MessageID{"a1", "r1", "r2", "r3"}, o.Evicted, "the batch went as one unit once the model had read it")
		assert.Empty(t, o.Failure())
	})
}

func TestStreamingResult(t *testing.T) {
	t.Run("unguarded", func(t *testing.T) {
		o := streamingResult(false)
		assert.Equal(t, 130, o.Streamed)
		assert.Equal(t, 50, o.Kept, "the first chunk's 80 tokens are lost")
		assert.True(t, o.Valid, "what is left still parses")
		assert.Zero(t, o.Failing, "and hides the failing check")
		assert.NotEmpty(t, o.Failure())
	})
	t.Run("guarded", func(t *testing.T) {
		o := streamingResult(true)
		assert.Equal(t, o.Streamed, o.Kept)
		assert.Equal(t, 1, o.Failing)
		assert.Len(t, o.Deferred, 3, "one deferral per chunk while the result streams")
		assert.Empty(t, o.Failure())
	})
}

func TestGhostTool(t *testing.T) {
	t.Run("unguarded", func(t *testing.T) {
		o := ghostTool(false)
		assert.True(t, o.Ghost, "schema gone, arguments resident, no tombstone")
		assert.NotContains(t, o.Sent, "notify")
		assert.Contains(t, o.Invalid, `missing required property "notify"`)
		assert.Contains(t, o.Invalid, "assignee_id: want object, got string")
		assert.Equal(t, []string{"INC-42", "INC-43"}, o.Incidents, "the duplicate incident")
		assert.False(t, o.Reexpanded)
		assert.NotEmpty(t, o.Failure())
	})
	t.Run("guarded", func(t *testing.T) {
		o := ghostTool(true)
		assert.False(t, o.Ghost)
		assert.True(t, o.Reexpanded, "the model asked for the tombstoned schema")
		assert.Empty(t, o.Invalid)
		assert.Contains(t, o.Sent, `"notify":true`)
		assert.Equal(t, []string{"INC-42"}, o.Incidents)
		assert.Empty(t, o.Failure())
	})
}

func TestNegativeResult(t *testing.T) {
	t.Run("unguarded", func(t *testing.T) {
		o := negativeResult(false)
		assert.True(t, o.Evicted)
		assert.True(t, o.Reran)
		assert.Equal(t, "shell", o.Patched)
		assert.NotEmpty(t, o.Failure())
	})
	t.Run("guarded", func(t *testing.T) {
		o := negativeResult(true)
		assert.False(t, o.Evicted)
		assert.False(t, o.Reran)
		assert.Equal(t, "cgroup", o.Patched)
		// The guard's sweep meets the user's task first, the oldest unit:
		// irreducible text. Then what the policy proposes: a1 is the
		// model's prose; r1 read a file before apply_patch ran, so
		// reading it again may not give the same bytes; think is the
		// negative result. The patch's result has not been read yet.
		assert.Equal(t, []string{"u1/irreducible", "a1/irreducible", "r1/irreducible", "think/negative-result", "r2/unread"}, refusals(t, o.Refusals))
		assert.Empty(t, o.Failure())
	})
}

func TestOneTimeNonce(t *testing.T) {
	t.Run("unguarded", func(t *testing.T) {
		o := oneTimeNonce(false)
		assert.True(t, o.Evicted)
		assert.Equal(t, 2, o.Charges, "double submission")
		assert.NotEmpty(t, o.Failure())
	})
	t.Run("guarded", func(t *testing.T) {
		o := oneTimeNonce(true)
		assert.False(t, o.Evicted)
		assert.Equal(t, 1, o.Charges)
		// The invoice was fetched before the payment: fetched again it
		// would read paid. Before the model has read the receipt, its unit
		// stays whatever the pruner says. Once the model has answered, the
		// payment call is irreducible and the planned retry holds its
		// result. The guard's sweep meets the user's request first, the
		// oldest unit, and the policy the model's answer too: irreducible
		// text.
		assert.Equal(t, []string{"u1/irreducible", "a0/irreducible", "r0/irreducible", "a1/unread", "r1/unread",
			"a1/irreducible", "r1/referenced", "a2/irreducible"}, refusals(t, o.Refusals))
		assert.Empty(t, o.Failure())
	})
}

// refusals lists the refusals as message/code: the regenerability
// gate's, and the boundary's for what the model has not read yet.
func refusals(t *testing.T, vs []*pruneguard.Violation) []string {
	var out []string
	for _, v := range vs {
		if v.Code == pruneguard.CodeUnread {
			assert.ErrorIs(t, v, pruneguard.ErrBoundary)
		} else {
			assert.ErrorIs(t, v, pruneguard.ErrRegen)
		}
		for _, m := range v.Messages { // a unit's messages held for one reason share a refusal
			out = append(out, string(m)+"/"+string(v.Code))
		}
	}
	return out
}

func TestRun(t *testing.T) {
	var a, b bytes.Buffer
	require.Equal(t, 0, run(&a), a.String())
	require.Equal(t, 0, run(&b))
	assert.Equal(t, a.String(), b.String(), "the output is deterministic")
	assert.True(t, strings.HasSuffix(a.String(), "5/5 incidents prevented (5/5 reproduced without the guard)\n"))
	assert.Equal(t, len(incidents), strings.Count(a.String(), "=> INCIDENT:"))
	assert.Equal(t, len(incidents), strings.Count(a.String(), "=> prevented"))
}

func TestProviderCheck(t *testing.T) {
	ok := prompt{Messages: []pruneguard.Message{
		{ID: "a", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "c"}}},
		{ID: "r", Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{"c"}},
	}}
	assert.NoError(t, invoke(ok))
	var pe *providerError
	require.ErrorAs(t, invoke(prompt{Messages: ok.Messages[:1]}), &pe)
	assert.Equal(t, []pruneguard.CallID{"c"}, pe.Unanswered)
	require.ErrorAs(t, invoke(prompt{Messages: ok.Messages[1:]}), &pe)
	assert.Equal(t, []pruneguard.CallID{"c"}, pe.Orphans)
}
