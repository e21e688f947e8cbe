package pruneguard_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// Config.PointerTokens: what a pointer costs where the runtime shows it.

// resolveAll is a Resolver for which every pointer leads to its content.
var resolveAll = pruneguard.ResolverFunc(func(pruneguard.Pointer) bool { return true })

func ptr(key string) pruneguard.Pointer { return pruneguard.Pointer{Store: "s", Key: key} }

// messageTokens sums the tokens of the messages c holds.
func messageTokens(c *pruneguard.Context) int {
	n := 0
	for _, m := range c.Messages() {
		n += m.Tokens
	}
	return n
}

func applied(t *testing.T, c *pruneguard.Context, p pruneguard.Plan) *pruneguard.Decision {
	t.Helper()
	d, err := c.Prune(p)
	require.NoError(t, err)
	before := c.Tokens()
	require.NoError(t, c.Apply(d))
	assert.Equal(t, before-d.Freed, c.Tokens(), "Freed is what Apply took off Tokens")
	return d
}

func TestPointerTokensStubShowsPointer(t *testing.T) {
	for _, pt := range []int{0, 40} {
		c := postContext(t, pruneguard.Config{Resolver: resolveAll, PointerTokens: pt}, 100, 100, 5)
		require.NoError(t, c.Spill("r0", ptr("p0")))
		d := applied(t, c, pruneguard.Plan{Stub: []pruneguard.MessageID{"r0"}})
		assert.Equal(t, []pruneguard.SpillNote{{Message: "r0", Pointer: ptr("p0")}}, d.Pointers)
		m, _ := c.Message("r0")
		want := pruneguard.DefaultStubTokens // zero: today's count, whatever it shows
		if pt > 0 {
			want = pt
		}
		assert.Equal(t, want, m.Tokens, "PointerTokens %d", pt)
		assert.Equal(t, 100-want, d.Freed)
		assert.Equal(t, messageTokens(c), c.Tokens(), "no line: nothing was evicted")
	}
}

// A stub that shows no pointer counts the stub's tokens; one given a
// pointer after it was stubbed counts PointerTokens from then on, and
// one that loses it counts the stub's again.
func TestPointerTokensSpillAfterStub(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{PointerTokens: 40, StubTokens: 6})
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "read", Annotations: pruneguard.Annotations{
		ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Tokens: 5,
		Calls: []pruneguard.Call{{ID: "k", Tool: "read", Args: []byte(`{}`)}}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "r", Role: pruneguard.RoleTool, Tokens: 100,
		Content: []byte("file"), Answers: []pruneguard.CallID{"k"}}))
	modelRead(t, c, "seen")
	d := applied(t, c, pruneguard.Plan{Stub: []pruneguard.MessageID{"r"}})
	assert.Empty(t, d.Pointers)
	assert.Equal(t, 94, d.Freed)
	assert.Equal(t, 11, c.Tokens())
	require.NoError(t, c.Spill("r", ptr("later")))
	assert.Equal(t, 5+40, c.Tokens())
	m, _ := c.Message("r")
	assert.Equal(t, 40, m.Tokens)
	require.NoError(t, c.Spill("r", pruneguard.Pointer{}))
	assert.Equal(t, 11, c.Tokens())
}

// Evicted spilled messages: one line per distinct pointer, counted by
// the Apply that first evicts a message with it, and never again.
func TestPointerTokensLines(t *testing.T) {
	c := postContext(t, pruneguard.Config{Resolver: resolveAll, PointerTokens: 40}, 100, 200, 300, 400, 500)
	modelRead(t, c, "seen")
	for id, p := range map[pruneguard.MessageID]string{"a0": "p", "r0": "p", "a1": "p", "r1": "p", "a2": "q", "r2": "q", "a3": "p", "r3": "p"} {
		require.NoError(t, c.Spill(id, ptr(p)))
	}
	// Two units behind one pointer in one decision: one line.
	d := applied(t, c, pruneguard.Plan{Evict: []pruneguard.MessageID{"a0", "a1"}})
	assert.Equal(t, 5+100+5+200-40, d.Freed)
	assert.Equal(t, messageTokens(c)+40, c.Tokens())
	// Its pointer already has its line.
	d = applied(t, c, pruneguard.Plan{Evict: []pruneguard.MessageID{"a3"}})
	assert.Equal(t, 5+400, d.Freed)
	assert.Equal(t, messageTokens(c)+40, c.Tokens())
	// A new pointer, a new line.
	d = applied(t, c, pruneguard.Plan{Evict: []pruneguard.MessageID{"a2"}})
	assert.Equal(t, 5+300-40, d.Freed)
	assert.Equal(t, messageTokens(c)+80, c.Tokens())

	// A message without a pointer leaves no line; a stubbed one with a
	// pointer trades its pointer text for the line when it is evicted.
	require.NoError(t, c.Spill("r4", ptr("s")))
	d = applied(t, c, pruneguard.Plan{Stub: []pruneguard.MessageID{"r4"}})
	assert.Equal(t, 500-40, d.Freed)
	assert.Equal(t, messageTokens(c)+80, c.Tokens())
	require.NoError(t, c.Spill("a4", ptr("s")))
	d = applied(t, c, pruneguard.Plan{Evict: []pruneguard.MessageID{"a4"}})
	assert.Equal(t, 5+40-40, d.Freed)
	assert.Equal(t, 100+120, c.Tokens(), "the system prompt and three lines")
}

// Two decisions made on one state that would add the same line: the
// second goes stale when the first is applied, so no line is counted
// twice nor a Freed left wrong.
func TestPointerTokensStaleDecision(t *testing.T) {
	c := postContext(t, pruneguard.Config{Resolver: resolveAll, PointerTokens: 40}, 100, 200)
	modelRead(t, c, "seen")
	for _, id := range []pruneguard.MessageID{"a0", "r0", "a1", "r1"} {
		require.NoError(t, c.Spill(id, ptr("p")))
	}
	d0, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"a0"}})
	require.NoError(t, err)
	d1, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"a1"}})
	require.NoError(t, err)
	assert.Equal(t, 5+200-40, d1.Freed)
	require.NoError(t, c.Apply(d0))
	assert.ErrorIs(t, c.Apply(d1), pruneguard.ErrStaleDecision)
	d1 = applied(t, c, pruneguard.Plan{Evict: []pruneguard.MessageID{"a1"}})
	assert.Equal(t, 5+200, d1.Freed)
	assert.Equal(t, 100+40, c.Tokens())
}

func TestPointerTokensValidate(t *testing.T) {
	err := pruneguard.Config{PointerTokens: -1}.Validate()
	var ce *pruneguard.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Config.PointerTokens", ce.Field)
	_, err = pruneguard.Guard{Budget: 10}.Check(pruneguard.NewContext(pruneguard.Config{PointerTokens: -1}))
	assert.ErrorAs(t, err, &ce)
}

// The guard does not spill a result to stub it when its pointer text
// would be no smaller, nor stub one whose stub would show a pointer no
// smaller than it.
func TestGuardDoesNotStubBelowPointer(t *testing.T) {
	ctx := t.Context()
	stubAll := pruneguard.PolicyFunc(func(es []pruneguard.Entry, need int) pruneguard.Plan {
		var p pruneguard.Plan
		for _, e := range es {
			if e.Result && !e.Stubbed {
				p.Stub = append(p.Stub, e.ID)
			}
		}
		return p
	})
	run := func(pt int) (*pruneguard.Context, pruneguard.Result) {
		sp := &spill.Spiller{Store: &spill.Memory{}}
		c := postContext(t, pruneguard.Config{Resolver: sp, PointerTokens: pt}, 30, 200)
		modelRead(t, c, "seen")
		res, err := pruneguard.Guard{Budget: 200, Policy: stubAll, Spill: sp}.Check(c)
		require.NoError(t, err)
		return c, res
	}
	// Without PointerTokens both are spilled and stubbed.
	_, res := run(0)
	require.Len(t, res.Spills, 1)
	assert.Equal(t, []pruneguard.MessageID{"r0", "r1"}, res.Spills[0].Messages)

	c, res := run(50)
	assert.Equal(t, pruneguard.Pruned, res.Outcome)
	require.Len(t, res.Spills, 1)
	assert.Equal(t, []pruneguard.MessageID{"r1"}, res.Spills[0].Messages, "r0 is smaller than its pointer text")
	r0, _ := c.Message("r0")
	assert.Equal(t, 30, r0.Tokens)
	assert.True(t, r0.Pointer.IsZero())
	r1, _ := c.Message("r1")
	assert.Equal(t, 50, r1.Tokens)
	assert.Equal(t, 100+5+30+5+50, res.After)
	assert.Equal(t, res.After, c.Tokens())

	// Already spilled: a result no larger than its pointer text is not
	// stubbed either.
	sp := &spill.Spiller{Store: &spill.Memory{}}
	c = postContext(t, pruneguard.Config{Resolver: sp, PointerTokens: 50}, 50, 200)
	modelRead(t, c, "seen")
	_, err := sp.Spill(ctx, c, "r0")
	require.NoError(t, err)
	res, err = pruneguard.Guard{Budget: 210, Policy: stubAll, Spill: sp}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, 100+5+50+5+50, res.After)
	for _, d := range res.Decisions {
		assert.NotContains(t, d.Stub, pruneguard.MessageID("r0"))
	}
	r0, _ = c.Message("r0")
	assert.Equal(t, 50, r0.Tokens)
	assert.False(t, r0.Pointer.IsZero())
}

// A guard that spills and evicts counts the pointer lines it adds: the
// check ends within budget by the count that includes them.
func TestGuardSpillCountsLines(t *testing.T) {
	for _, pt := range []int{0, 40} {
		sp := &spill.Spiller{Store: &spill.Memory{}}
		c := postContext(t, pruneguard.Config{Resolver: sp, PointerTokens: pt}, 100, 200, 300, 400)
		modelRead(t, c, "seen")
		res, err := pruneguard.Guard{Budget: 510, Spill: sp}.Check(c)
		require.NoError(t, err)
		assert.Equal(t, pruneguard.Pruned, res.Outcome)
		lines := map[pruneguard.Pointer]bool{}
		for _, d := range res.Decisions {
			for _, n := range d.Pointers {
				if _, ok := c.Message(n.Message); !ok {
					lines[n.Pointer] = true
				}
			}
		}
		require.NotEmpty(t, lines)
		// What the runtime sends: the messages and one line per pointer.
		prompt := messageTokens(c) + pt*len(lines)
		assert.Equal(t, prompt, c.Tokens(), "PointerTokens %d", pt)
		assert.Equal(t, prompt, res.After)
		assert.LessOrEqual(t, res.After, 510, "PointerTokens %d", pt)
		// The three oldest rounds and the system prompt leave 505 tokens
		// of messages: enough without the line, not with it.
		_, kept := c.Message("r3")
		assert.Equal(t, pt == 0, kept, "PointerTokens %d", pt)
	}
}

// Save and Restore keep the lines counted: the restored Context counts
// the same tokens and adds no line for a pointer it already counts.
func TestPointerTokensSaveRestore(t *testing.T) {
	c := postContext(t, pruneguard.Config{Resolver: resolveAll, PointerTokens: 40}, 100, 200, 300)
	modelRead(t, c, "seen")
	for _, id := range []pruneguard.MessageID{"a0", "r0", "a1", "r1"} {
		require.NoError(t, c.Spill(id, ptr("p")))
	}
	require.NoError(t, c.Spill("r2", ptr("q")))
	require.NoError(t, c.Spill("a2", ptr("q")))
	applied(t, c, pruneguard.Plan{Evict: []pruneguard.MessageID{"a0"}})
	applied(t, c, pruneguard.Plan{Stub: []pruneguard.MessageID{"r2"}})
	var buf bytes.Buffer
	require.NoError(t, c.Save(&buf))
	saved := buf.String()
	assert.Contains(t, saved, `"pointerTokens":40`)
	assert.Contains(t, saved, `"pointerLines":[{"store":"s","key":"p"}]`)

	r, err := pruneguard.Restore(strings.NewReader(saved), pruneguard.Config{Resolver: resolveAll})
	require.NoError(t, err)
	assert.Equal(t, 40, r.Config().PointerTokens)
	assert.Equal(t, c.Tokens(), r.Tokens())
	var again bytes.Buffer
	require.NoError(t, r.Save(&again))
	assert.Equal(t, saved, again.String())
	for _, x := range []*pruneguard.Context{c, r} {
		d := applied(t, x, pruneguard.Plan{Evict: []pruneguard.MessageID{"a1"}})
		assert.Equal(t, 5+200, d.Freed, "p has its line already")
		d = applied(t, x, pruneguard.Plan{Evict: []pruneguard.MessageID{"a2"}})
		assert.Equal(t, 5+40-40, d.Freed, "q's stub makes way for its line")
	}
	assert.Equal(t, c.Tokens(), r.Tokens())

	// Without PointerTokens the state is what it always was.
	buf.Reset()
	require.NoError(t, postContext(t, pruneguard.Config{}, 10).Save(&buf))
	assert.NotContains(t, buf.String(), "pointer")

	// Lines in a state without PointerTokens, a line twice, a zero
	// pointer: not what Save writes.
	for _, bad := range []string{
		strings.Replace(saved, `"pointerTokens":40`, `"pointerTokens":0`, 1),
		strings.Replace(saved, `[{"store":"s","key":"p"}]`, `[{"store":"s","key":"p"},{"store":"s","key":"p"}]`, 1),
		strings.Replace(saved, `[{"store":"s","key":"p"}]`, `[{"store":"","key":""}]`, 1),
		strings.Replace(saved, `"pointerTokens":40`, `"pointerTokens":-40`, 1),
	} {
		require.NotEqual(t, saved, bad)
		_, err := pruneguard.Restore(strings.NewReader(bad), pruneguard.Config{})
		assert.True(t, errors.Is(err, pruneguard.ErrBadState), "%v", err)
		// With its digest made again, the check of what it says refuses it.
		_, err = pruneguard.Restore(bytes.NewReader(pruneguard.Reseal([]byte(bad))), pruneguard.Config{})
		assert.True(t, errors.Is(err, pruneguard.ErrBadState), "%v", err)
		assert.NotContains(t, err.Error(), "sha256")
	}
}
