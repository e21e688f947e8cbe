package pruneguard_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pg "github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// What the model has not read yet is in flight: a message that came after
// the model's last message stays, with its unit, until a request has
// shown it to the model and the model's next message follows it.

// recallSession: a pinned system prompt and task, the model's call of
// recall and the answer, which came after the model's last message. The
// answer is reconstructible (pure) or, with irreducible set, something
// only a spill lets go.
func recallSession(t testing.TB, cfg pg.Config, irreducible bool) *pg.Context {
	t.Helper()
	c := pg.NewContext(cfg)
	tool := pg.Tool{Name: "recall", Annotations: pg.Annotations{ReadOnlyHint: pg.Bool(true), OpenWorldHint: pg.Bool(false)}}
	if irreducible {
		tool.Annotations = pg.Annotations{}
	}
	require.NoError(t, c.RegisterTool(tool))
	appendAll(t.(*testing.T), c,
		pg.Message{ID: "sys", Role: pg.RoleSystem, Tokens: 100, Pinned: true},
		pg.Message{ID: "task", Role: pg.RoleUser, Tokens: 50, Pinned: true, Content: []byte("find the ticket")},
		pg.Message{ID: "a1", Role: pg.RoleAssistant, Tokens: 20, Calls: []pg.Call{{ID: "k1", Tool: "recall", Args: []byte(`{"key":"seg-7"}`)}}},
		pg.Message{ID: "r1", Role: pg.RoleTool, Tokens: 5000, Answers: []pg.CallID{"k1"}, Content: []byte("ticket 4411: the pool size")},
	)
	return c
}

// untouched reports whether message id is held as it was appended: not
// evicted, not stubbed, with no pointer.
func untouched(t *testing.T, c *pg.Context, id pg.MessageID, content string) {
	t.Helper()
	m, ok := c.Message(id)
	require.True(t, ok, "%s was evicted", id)
	assert.Equal(t, content, string(m.Content), "%s was stubbed", id)
	assert.True(t, m.Pointer.IsZero(), "%s was spilled to %v", id, m.Pointer)
}

// unreadRefused reports whether the refusals name unit u as unread.
func unreadRefused(vs []*pg.Violation, u pg.UnitID) bool {
	return slices.ContainsFunc(vs, func(v *pg.Violation) bool {
		return v.Code == pg.CodeUnread && errors.Is(v, pg.ErrBoundary) && slices.Contains(v.Units, u)
	})
}

// stubEverything names every result for a stub and every unit for
// eviction: what a careless policy proposes under a tiny budget.
var stubEverything = pg.PolicyFunc(func(es []pg.Entry, need int) pg.Plan {
	var p pg.Plan
	for _, e := range es {
		if e.Result {
			p.Stub = append(p.Stub, e.ID)
		}
		p.Evict = append(p.Evict, e.ID)
	}
	return p
})

// A recall answer the model has not read is never evicted, stubbed or
// spilled by a check, whatever the policy, the hoarding rule, the store
// and the budget: the check ends Deferred (or with a ceiling error) and
// says why. Once the model's next message follows it, it may go.
func TestUnreadRecallAnswerStays(t *testing.T) {
	policies := map[string]pg.Policy{
		"oldest first":    pg.OldestFirst{},
		"largest first":   pg.LargestResultsFirst{},
		"largest stubbed": pg.LargestResultsFirst{Stub: true},
		"clear tool uses": pg.KeepLastToolUses{Keep: 1, Stub: true},
		"names it all":    stubEverything,
	}
	for name, pol := range policies {
		for _, irreducible := range []bool{false, true} {
			for _, hoard := range []pg.HoardMode{pg.HoardReport, pg.HoardStub, pg.HoardEvict} {
				t.Run(fmt.Sprintf("%s irreducible=%v hoard=%v", name, irreducible, hoard), func(t *testing.T) {
					sp := &spill.Spiller{Store: &spill.Memory{}}
					c := recallSession(t, pg.Config{Resolver: sp, HoardTokens: 1000}, irreducible)
					g := pg.Guard{Budget: 10, Policy: pol, Spill: sp, Hoard: hoard, HoardKeep: 1}
					res, err := g.Check(c)
					require.NoError(t, err)
					assert.Equal(t, pg.Deferred, res.Outcome, "reason %v", res.Reason)
					assert.Empty(t, res.Decisions)
					assert.Empty(t, res.Spills)
					assert.True(t, unreadRefused(res.Refused, "a1"), "refused %v", res.Refused)
					untouched(t, c, "r1", "ticket 4411: the pool size")
					assert.Equal(t, []pg.MessageID{"r1"}, c.Unread())

					// Past a ceiling, a ceiling error that says why.
					g.Ceiling = 1000
					res, err = g.Check(c)
					var ce *pg.CeilingError
					require.ErrorAs(t, err, &ce)
					assert.Equal(t, pg.Deferred, res.Outcome)
					assert.True(t, unreadRefused(res.Refused, "a1"), "refused %v", res.Refused)
					assert.ErrorIs(t, ce.Cause, pg.ErrBoundary)
					untouched(t, c, "r1", "ticket 4411: the pool size")

					// The model reads it and answers: now it may go.
					require.NoError(t, c.Append(pg.Message{ID: "a2", Role: pg.RoleAssistant, Tokens: 10, Content: []byte("ticket 4411")}))
					assert.Empty(t, c.Unread())
					g.Ceiling = 0
					res, err = g.Check(c)
					require.NoError(t, err)
					assert.Equal(t, pg.Pruned, res.Outcome, "reason %v", res.Reason)
					m, held := c.Message("r1")
					assert.True(t, !held || m.Tokens < 5000, "r1 went or was stubbed once read")
				})
			}
		}
	}
}

// A ceiling error names the unread unit it could not take.
func TestUnreadCeilingErrorSaysWhy(t *testing.T) {
	c := recallSession(t, pg.Config{}, false)
	res, err := pg.Guard{Budget: 10, Ceiling: 1000}.Check(c)
	var ce *pg.CeilingError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, pg.ErrCeiling)
	assert.Equal(t, pg.Deferred, res.Outcome)
	assert.ErrorIs(t, ce.Cause, pg.ErrBoundary)
	assert.Contains(t, err.Error(), "unread unit a1")
	assert.True(t, unreadRefused(res.Refused, "a1"))
}

// Older units go as before; the unread unit stays, and the check says so.
func TestUnreadStaysWhileOlderUnitsGo(t *testing.T) {
	c := pg.NewContext(pg.Config{})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "read", Annotations: pg.Annotations{ReadOnlyHint: pg.Bool(true), OpenWorldHint: pg.Bool(false)}}))
	appendAll(t, c,
		pg.Message{ID: "sys", Role: pg.RoleSystem, Tokens: 100, Pinned: true},
		pg.Message{ID: "a0", Role: pg.RoleAssistant, Tokens: 10, Calls: []pg.Call{{ID: "k0", Tool: "read"}}},
		pg.Message{ID: "r0", Role: pg.RoleTool, Tokens: 400, Answers: []pg.CallID{"k0"}},
		pg.Message{ID: "a1", Role: pg.RoleAssistant, Tokens: 10, Calls: []pg.Call{{ID: "k1", Tool: "read"}}},
		pg.Message{ID: "r1", Role: pg.RoleTool, Tokens: 400, Answers: []pg.CallID{"k1"}, Content: []byte("fresh")},
	)
	res, err := pg.Guard{Budget: 120}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pg.Pruned, res.Outcome)
	evicted, _ := evictedBy(res)
	assert.Equal(t, []pg.MessageID{"a0", "r0"}, evicted)
	untouched(t, c, "r1", "fresh")
	assert.True(t, unreadRefused(res.Refused, "a1"))
	assert.Greater(t, res.After, 120, "over the budget: what is left is unread")
}

// Any message after the model's last one is unread, a user's turn too;
// the unit of an unread message is held back whole, in both boundary
// modes, and reported so by the snapshots and walks a policy reads.
func TestUnreadMessagesAndTheirUnits(t *testing.T) {
	for _, mode := range []pg.BoundaryMode{pg.BoundaryStrict, pg.BoundaryRelaxed} {
		c := pg.NewContext(pg.Config{Boundary: mode, TextClass: pg.Reconstructible})
		require.NoError(t, c.RegisterTool(pg.Tool{Name: "read", Annotations: pg.Annotations{ReadOnlyHint: pg.Bool(true), OpenWorldHint: pg.Bool(false)}}))
		appendAll(t, c,
			pg.Message{ID: "u1", Role: pg.RoleUser, Tokens: 10},
			pg.Message{ID: "a1", Role: pg.RoleAssistant, Tokens: 10, Calls: []pg.Call{{ID: "k1", Tool: "read"}, {ID: "k2", Tool: "read"}}},
			pg.Message{ID: "r1", Role: pg.RoleTool, Tokens: 100, Answers: []pg.CallID{"k1"}},
			pg.Message{ID: "r2", Role: pg.RoleTool, Tokens: 100, Answers: []pg.CallID{"k2"}},
			pg.Message{ID: "u2", Role: pg.RoleUser, Tokens: 10, Content: []byte("and the other file?")},
		)
		assert.Equal(t, []pg.MessageID{"r1", "r2", "u2"}, c.Unread(), "mode %d", mode)
		unread := map[pg.MessageID]bool{}
		for _, e := range c.Snapshot() {
			unread[e.ID] = e.Unread
		}
		assert.Equal(t, map[pg.MessageID]bool{"u1": false, "a1": true, "r1": true, "r2": true, "u2": true}, unread,
			"a1 was written by the model, but its unit holds what it has not read")
		var units []string
		for u := range c.View().Units() {
			units = append(units, fmt.Sprint(u.ID, " ", u.Unread))
		}
		assert.Equal(t, []string{"u1 false", "a1 true", "u2 true"}, units)

		d, err := c.Prune(pg.Plan{Evict: []pg.MessageID{"u1", "r1", "u2"}, Stub: []pg.MessageID{"r2"}})
		require.NoError(t, err)
		assert.Equal(t, []pg.MessageID{"u1"}, d.Evict)
		assert.Empty(t, d.Stub)
		var codes []string
		for _, v := range d.Refused {
			codes = append(codes, fmt.Sprint(v.Code, v.Units, v.Messages))
		}
		assert.Equal(t, []string{"unread[a1] [r1]", "unread[a1] [r2]", "unread[u2] [u2]"}, codes, "mode %d", mode)
		_, err = c.Prune(pg.Plan{Evict: []pg.MessageID{"u2"}, Split: pg.SplitStrict})
		var v *pg.Violation
		require.ErrorAs(t, err, &v)
		assert.Equal(t, pg.CodeUnread, v.Code)

		// The model's answer streams: it has read everything before it.
		require.NoError(t, c.Open(pg.Message{ID: "a2", Role: pg.RoleAssistant}))
		assert.Empty(t, c.Unread(), "the model's own message is not unread to it")
		require.NoError(t, c.Close("a2"))
		d, err = c.Prune(pg.Plan{Evict: []pg.MessageID{"r1", "u2"}})
		require.NoError(t, err)
		assert.Equal(t, []pg.MessageID{"a1", "r1", "r2", "u2"}, d.Evict, "mode %d", mode)
		assert.Empty(t, c.Unread())
	}
}

// A message that makes calls is the model's, whatever its role: only the
// model calls tools. Calls given at Close count too.
func TestCallsMakeAMessageTheModels(t *testing.T) {
	c := pg.NewContext(pg.Config{})
	appendAll(t, c,
		pg.Message{ID: "u1", Tokens: 10},
		pg.Message{ID: "c1", Calls: []pg.Call{{ID: "k1", Tool: "read"}}},
	)
	assert.Empty(t, c.Unread(), "c1 is the model's: it read u1")
	appendAll(t, c, pg.Message{ID: "r1", Answers: []pg.CallID{"k1"}})
	assert.Equal(t, []pg.MessageID{"r1"}, c.Unread())
	require.NoError(t, c.Open(pg.Message{ID: "s"}))
	assert.Equal(t, []pg.MessageID{"r1", "s"}, c.Unread(), "no role, no calls yet")
	require.NoError(t, c.Close("s", pg.Call{ID: "k2", Tool: "read"}))
	assert.Empty(t, c.Unread(), "its calls came with Close")
	// A result is no message of the model, whatever its role.
	appendAll(t, c, pg.Message{ID: "r2", Role: "function", Answers: []pg.CallID{"k2"}})
	assert.Equal(t, []pg.MessageID{"r2"}, c.Unread())
}

// The hoarding rule spares a large result the model has not read, even
// once it is no longer in the newest unit.
func TestHoardingSparesUnread(t *testing.T) {
	for _, hoard := range []pg.HoardMode{pg.HoardStub, pg.HoardEvict} {
		c := recallSession(t, pg.Config{HoardTokens: 1000}, false)
		appendAll(t, c, pg.Message{ID: "u2", Role: pg.RoleUser, Tokens: 5, Content: []byte("well?")})
		res, err := pg.Guard{Budget: 1 << 20, Hoard: hoard}.Check(c)
		require.NoError(t, err)
		assert.Equal(t, pg.UnderBudget, res.Outcome, "hoard %v", hoard)
		untouched(t, c, "r1", "ticket 4411: the pool size")

		appendAll(t, c, pg.Message{ID: "a2", Role: pg.RoleAssistant, Tokens: 5})
		res, err = pg.Guard{Budget: 1 << 20, Hoard: hoard}.Check(c)
		require.NoError(t, err)
		assert.Equal(t, pg.Pruned, res.Outcome, "hoard %v: read, it is hoarded", hoard)
	}
}

// A runtime may spill an unread message itself: a pointer removes
// nothing, and the gates still keep the message until the model reads it.
func TestSpilledUnreadStays(t *testing.T) {
	sp := &spill.Spiller{Store: &spill.Memory{}}
	c := recallSession(t, pg.Config{Resolver: sp}, true)
	ptr, err := sp.Spill(t.Context(), c, "a1", "r1")
	require.NoError(t, err)
	d, err := c.Prune(pg.Plan{Evict: []pg.MessageID{"r1"}, Stub: []pg.MessageID{"r1"}})
	require.NoError(t, err)
	assert.True(t, d.Empty())
	assert.True(t, unreadRefused(d.Refused, "a1"))
	res, err := pg.Guard{Budget: 10, Spill: sp}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pg.Deferred, res.Outcome)
	m, ok := c.Message("r1")
	require.True(t, ok)
	assert.Equal(t, ptr, m.Pointer)
	assert.Equal(t, 5000, m.Tokens)
}
