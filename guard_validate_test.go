package pruneguard_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// loopContext is a small agent session: a pinned system prompt, a user
// task, then rounds of an assistant call to a closed-world read-only tool
// and its result, of the given sizes.
func loopContext(t testing.TB, cfg pruneguard.Config, sizes ...int) *pruneguard.Context {
	t.Helper()
	c := pruneguard.NewContext(cfg)
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "read", Annotations: pruneguard.Annotations{
		ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 100, Pinned: true}))
	// The task is tagged: the runtime can give it again (it keeps it in
	// its tracker), so it may go as the reads may.
	require.NoError(t, c.Append(pruneguard.Message{ID: "task", Role: pruneguard.RoleUser, Tokens: 10, Content: []byte("fix the build"),
		Class: pruneguard.Reconstructible}))
	for i, n := range sizes {
		k := pruneguard.CallID(fmt.Sprint("k", i))
		require.NoError(t, c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("a", i)), Role: pruneguard.RoleAssistant, Tokens: 5,
			Calls: []pruneguard.Call{{ID: k, Tool: "read", Args: []byte(`{"path":"f"}`)}}}))
		require.NoError(t, c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("r", i)), Role: pruneguard.RoleTool, Tokens: n,
			Content: []byte(fmt.Sprint("content of r", i)), Answers: []pruneguard.CallID{k}}))
	}
	return c
}

// state is what a check may change in a Context, for comparing before and
// after.
func state(c *pruneguard.Context) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tokens %d\n", c.Tokens())
	for _, m := range c.Messages() {
		fmt.Fprintf(&b, "%s %q %v %d\n", m.ID, m.Content, m.Pointer, m.Tokens)
	}
	for _, e := range c.Snapshot() {
		fmt.Fprintf(&b, "%s stubbed=%v unit=%s\n", e.ID, e.Stubbed, e.Unit)
	}
	fmt.Fprintf(&b, "refusals %d\n", len(c.Refusals()))
	return b.String()
}

func TestZeroGuardIsRefusedAndChangesNothing(t *testing.T) {
	c := loopContext(t, pruneguard.Config{}, 100, 200, 300)
	before := state(c)
	res, err := pruneguard.Guard{}.Check(c)
	require.ErrorIs(t, err, pruneguard.ErrConfig)
	var ce *pruneguard.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Guard.Budget", ce.Field)
	assert.Equal(t, "0", ce.Value)
	assert.Contains(t, err.Error(), "Guard.Budget")
	assert.Equal(t, before, state(c), "nothing changed")
	assert.Empty(t, res.Decisions)
	assert.Equal(t, c.Tokens(), res.Before)
	assert.Equal(t, c.Tokens(), res.After)
	assert.Empty(t, res.Compaction, "no check ran")

	// Validate says the same, and so does a zero Context.
	assert.ErrorIs(t, pruneguard.Guard{}.Validate(), pruneguard.ErrConfig)
	var zero pruneguard.Context
	_, err = pruneguard.Guard{}.Check(&zero)
	assert.ErrorIs(t, err, pruneguard.ErrConfig)
	_, err = pruneguard.Guard{Budget: 10}.Check(nil)
	assert.ErrorIs(t, err, pruneguard.ErrConfig)
	assert.ErrorIs(t, pruneguard.Guard{Budget: 10}.ValidateFor(nil), pruneguard.ErrConfig)
}

func TestValidConfigurations(t *testing.T) {
	assert.NoError(t, pruneguard.Config{}.Validate(), "the zero Config is valid")
	assert.NoError(t, pruneguard.Guard{Budget: 1}.Validate())
	sp := &spill.Spiller{Store: &spill.Memory{}}
	g := pruneguard.Guard{Budget: 100, Ceiling: 300, Trigger: 200, MinClear: 50, Rounds: 3, Split: pruneguard.SplitStrict,
		Spill: sp, Hoard: pruneguard.HoardEvict, HoardKeep: 2}
	assert.NoError(t, g.Validate())
	c := pruneguard.NewContext(pruneguard.Config{Resolver: sp, HoardTokens: 1000, Boundary: pruneguard.BoundaryRelaxed,
		Regen: pruneguard.RegenDropUnsafe, TextClass: pruneguard.Irreducible, StubText: "[gone]", StubTokens: 2, Ceiling: 400})
	assert.NoError(t, g.ValidateFor(c))
	assert.NoError(t, pruneguard.Guard{Budget: 100, Trigger: 100}.ValidateFor(c), "a trigger at the budget")
}

// Every configuration the guard refuses: Check returns a *ConfigError
// naming the field, before anything changes, under budget or over it.
func TestEachRefusedConfiguration(t *testing.T) {
	sp := &spill.Spiller{Store: &spill.Memory{}}
	cases := []struct {
		name  string
		g     pruneguard.Guard
		cfg   pruneguard.Config
		field string
	}{
		{"no budget", pruneguard.Guard{}, pruneguard.Config{}, "Guard.Budget"},
		{"negative budget", pruneguard.Guard{Budget: -5}, pruneguard.Config{}, "Guard.Budget"},
		{"negative ceiling", pruneguard.Guard{Budget: 10, Ceiling: -1}, pruneguard.Config{}, "Guard.Ceiling"},
		{"negative trigger", pruneguard.Guard{Budget: 10, Trigger: -1}, pruneguard.Config{}, "Guard.Trigger"},
		{"negative min clear", pruneguard.Guard{Budget: 10, MinClear: -1}, pruneguard.Config{}, "Guard.MinClear"},
		{"negative rounds", pruneguard.Guard{Budget: 10, Rounds: -1}, pruneguard.Config{}, "Guard.Rounds"},
		{"negative hoard keep", pruneguard.Guard{Budget: 10, HoardKeep: -1}, pruneguard.Config{}, "Guard.HoardKeep"},
		{"ceiling below budget", pruneguard.Guard{Budget: 10, Ceiling: 9}, pruneguard.Config{}, "Guard.Ceiling"},
		{"trigger below budget", pruneguard.Guard{Budget: 10, Trigger: 9}, pruneguard.Config{}, "Guard.Trigger"},
		{"trigger above ceiling", pruneguard.Guard{Budget: 10, Trigger: 30, Ceiling: 20}, pruneguard.Config{}, "Guard.Trigger"},
		{"split out of range", pruneguard.Guard{Budget: 10, Split: pruneguard.SplitStrict + 1}, pruneguard.Config{}, "Guard.Split"},
		{"hoard out of range", pruneguard.Guard{Budget: 10, Hoard: pruneguard.HoardEvict + 1}, pruneguard.Config{HoardTokens: 5}, "Guard.Hoard"},
		{"boundary out of range", pruneguard.Guard{Budget: 10}, pruneguard.Config{Boundary: pruneguard.BoundaryRelaxed + 1}, "Config.Boundary"},
		{"regen out of range", pruneguard.Guard{Budget: 10}, pruneguard.Config{Regen: pruneguard.RegenDropUnsafe + 1}, "Config.Regen"},
		{"class out of range", pruneguard.Guard{Budget: 10}, pruneguard.Config{TextClass: pruneguard.Irreducible + 1}, "Config.TextClass"},
		{"negative config ceiling", pruneguard.Guard{Budget: 10, Ceiling: 50}, pruneguard.Config{Ceiling: -1}, "Config.Ceiling"},
		{"negative hoard tokens", pruneguard.Guard{Budget: 10}, pruneguard.Config{HoardTokens: -1}, "Config.HoardTokens"},
		{"negative stub tokens", pruneguard.Guard{Budget: 10}, pruneguard.Config{StubTokens: -1}, "Config.StubTokens"},
		{"blank stub text", pruneguard.Guard{Budget: 10}, pruneguard.Config{StubText: " \n\t"}, "Config.StubText"},
		{"spill without resolver", pruneguard.Guard{Budget: 10, Spill: sp}, pruneguard.Config{}, "Guard.Spill"},
		{"hoard without hoard tokens", pruneguard.Guard{Budget: 10, Hoard: pruneguard.HoardStub}, pruneguard.Config{}, "Guard.Hoard"},
		{"config ceiling below budget", pruneguard.Guard{Budget: 10}, pruneguard.Config{Ceiling: 9}, "Config.Ceiling"},
		{"trigger above config ceiling", pruneguard.Guard{Budget: 10, Trigger: 30}, pruneguard.Config{Ceiling: 20}, "Guard.Trigger"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, sizes := range [][]int{{1}, {100, 200, 300}} { // under budget, over it
				c := loopContext(t, tc.cfg, sizes...)
				before := state(c)
				res, err := tc.g.Check(c)
				require.ErrorIs(t, err, pruneguard.ErrConfig)
				var ce *pruneguard.ConfigError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, tc.field, ce.Field, "%v", err)
				assert.NotEmpty(t, ce.Reason)
				assert.Equal(t, before, state(c), "a refused configuration changes nothing")
				assert.Empty(t, res.Decisions)
				assert.Equal(t, pruneguard.UnderBudget, res.Outcome, "the zero outcome: nothing was done")
				assert.ErrorIs(t, tc.g.ValidateFor(c), pruneguard.ErrConfig)
			}
		})
	}
}

// What depends on the guard and the Config together is ValidateFor's
// alone: each half passes its own Validate.
func TestCombinedCasesAreValidateFors(t *testing.T) {
	sp := &spill.Spiller{Store: &spill.Memory{}}
	cases := []struct {
		name string
		g    pruneguard.Guard
		cfg  pruneguard.Config
	}{
		{"spill without resolver", pruneguard.Guard{Budget: 10, Spill: sp}, pruneguard.Config{}},
		{"hoard without hoard tokens", pruneguard.Guard{Budget: 10, Hoard: pruneguard.HoardStub}, pruneguard.Config{}},
		{"config ceiling below budget", pruneguard.Guard{Budget: 10}, pruneguard.Config{Ceiling: 9}},
		{"trigger above config ceiling", pruneguard.Guard{Budget: 10, Trigger: 30}, pruneguard.Config{Ceiling: 20}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.NoError(t, tc.g.Validate())
			assert.NoError(t, tc.cfg.Validate())
			assert.ErrorIs(t, tc.g.ValidateFor(pruneguard.NewContext(tc.cfg)), pruneguard.ErrConfig)
		})
	}
}

func TestValidateReportsEveryRefusedField(t *testing.T) {
	err := pruneguard.Guard{Budget: -1, Ceiling: -2, Split: 9}.Validate()
	require.ErrorIs(t, err, pruneguard.ErrConfig)
	var fields []string
	var walk func(error)
	walk = func(err error) {
		var ce *pruneguard.ConfigError
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		} else if errors.As(err, &ce) {
			fields = append(fields, ce.Field)
		}
	}
	walk(err)
	assert.Equal(t, []string{"Guard.Budget", "Guard.Ceiling", "Guard.Split"}, fields)
	var ce *pruneguard.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Guard.Budget", ce.Field, "errors.As finds the first")

	err = pruneguard.Config{Boundary: 7, StubText: " "}.Validate()
	assert.ErrorContains(t, err, "Config.Boundary")
	assert.ErrorContains(t, err, "Config.StubText")
}

// The check of a valid configuration costs nothing on the under-budget
// path (TestCheckUnderBudgetDoesNotAllocate covers the plain guard).
func TestValidatedUnderBudgetCheckDoesNotAllocate(t *testing.T) {
	sp := &spill.Spiller{Store: &spill.Memory{}}
	c := loopContext(t, pruneguard.Config{Resolver: sp, HoardTokens: 1 << 20, Ceiling: 1 << 20, StubText: "[gone]"}, 100, 200)
	g := pruneguard.Guard{Budget: 1 << 19, Trigger: 1 << 19, MinClear: 10, Spill: sp, Hoard: pruneguard.HoardStub,
		Screen: pruneguard.ScreenFunc(func(*pruneguard.Decision) []*pruneguard.Violation { return nil })}
	allocs := testing.AllocsPerRun(100, func() {
		if r, err := g.Check(c); err != nil || r.Outcome != pruneguard.UnderBudget {
			t.Fatal(r.Outcome, err)
		}
	})
	assert.Zero(t, allocs)
}
