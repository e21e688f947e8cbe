package pruneguard

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestApplyRefusesStaleDecisions(t *testing.T) {
	events := map[string]func(c *Context) error{
		"coupled":       func(c *Context) error { return c.Couple("u1", "a1") },
		"pinned":        func(c *Context) error { return c.Pin("r1") },
		"spilled":       func(c *Context) error { return c.Spill("r2", Pointer{Store: "s", Key: "k"}) },
		"marked":        func(c *Context) error { return c.Mark("r2", TransientState) },
		"step planned":  func(c *Context) error { return c.PlanStep("next", "u2") },
		"tool migrated": func(c *Context) error { return c.RegisterTool(Tool{Name: "x", Version: "2"}) },
		"sealed":        func(c *Context) error { c.SealSteps(true); return nil },
		"new pending call": func(c *Context) error {
			return c.Append(Message{ID: "a9", Calls: []Call{{ID: "c9", Tool: "x"}}})
		},
		"stream opened": func(c *Context) error { return c.Open(Message{ID: "s9"}) },
	}
	for name, ev := range events {
		t.Run(name, func(t *testing.T) {
			c := batchContext(t, Config{}, false)
			d, err := c.Prune(Plan{Evict: []MessageID{"a1", "u2"}})
			require.NoError(t, err)
			require.NoError(t, ev(c))
			before := observe(c)
			err = c.Apply(d)
			require.ErrorIs(t, err, ErrStaleDecision)
			var se *StaleError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, before, observe(c))
		})
	}
	t.Run("unrelated append in relaxed mode", func(t *testing.T) {
		c := batchContext(t, Config{Boundary: BoundaryRelaxed}, true)
		d, err := c.Prune(Plan{Evict: []MessageID{"a1"}})
		require.NoError(t, err)
		mustAppend(t, c, Message{ID: "r3", Answers: []CallID{"c3"}}, Message{ID: "u9", Tokens: 1})
		require.NoError(t, c.Apply(d))
		_, ok := c.Message("a1")
		assert.False(t, ok)
	})
	t.Run("units named", func(t *testing.T) {
		c := batchContext(t, Config{}, false)
		d, err := c.Prune(Plan{Evict: []MessageID{"a1"}})
		require.NoError(t, err)
		require.NoError(t, c.Pin("r2"))
		var se *StaleError
		require.ErrorAs(t, c.Apply(d), &se)
		assert.Equal(t, []UnitID{"a1"}, se.Units)
	})
}

func TestApplyOnceAndOnlyHere(t *testing.T) {
	c := batchContext(t, Config{}, false)
	other := batchContext(t, Config{}, false)
	d, err := c.Prune(Plan{Evict: []MessageID{"u1"}})
	require.NoError(t, err)
	assert.ErrorIs(t, other.Apply(d), ErrForeignDecision)
	assert.ErrorIs(t, c.Apply(nil), ErrForeignDecision)
	require.NoError(t, c.Apply(d))
	assert.ErrorIs(t, c.Apply(d), ErrForeignDecision)
	assert.Equal(t, 6, c.Len())
}

func TestPruneChangesNothing(t *testing.T) {
	c := batchContext(t, Config{}, false)
	before := observe(c)
	_, err := c.Prune(Plan{Evict: []MessageID{"u1", "r1"}, Stub: []MessageID{"r3"}})
	require.NoError(t, err)
	assert.Equal(t, before, observe(c))
}

func TestPlanNamingUnknownIDs(t *testing.T) {
	c := batchContext(t, Config{}, false)
	_, err := c.Prune(Plan{Evict: []MessageID{"u1", "ghost"}})
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "plan.evict", ie.Op)
	assert.Equal(t, "ghost", ie.ID)
	assert.True(t, errors.Is(err, ErrUnknownMessage))
}

func TestDefaultStub(t *testing.T) {
	c := batchContext(t, Config{}, false)
	d, err := c.Prune(Plan{Stub: []MessageID{"r1"}})
	require.NoError(t, err)
	assert.Equal(t, 100-8, d.Freed)
	require.NoError(t, c.Apply(d))
	m, _ := c.Message("r1")
	assert.Equal(t, DefaultStubText, string(m.Content))
	assert.Equal(t, 8, m.Tokens)

	// A result already smaller than a stub frees nothing.
	mustAppend(t, c,
		Message{ID: "a5", Calls: []Call{{ID: "c5", Tool: "x"}}},
		Message{ID: "r5", Tokens: 3, Answers: []CallID{"c5"}},
	)
	d, err = c.Prune(Plan{Stub: []MessageID{"r5"}})
	require.NoError(t, err)
	assert.Equal(t, 0, d.Freed)
}
