package pruneguard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// postContext is a session whose tool results cannot be obtained again:
// "post" is unannotated, so MCP's defaults make it non-idempotent and
// open-world. Each round is an assistant call and its result.
func postContext(t testing.TB, cfg pruneguard.Config, sizes ...int) *pruneguard.Context {
	t.Helper()
	c := pruneguard.NewContext(cfg)
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "post"}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 100, Pinned: true}))
	for i, n := range sizes {
		k := pruneguard.CallID(fmt.Sprint("k", i))
		require.NoError(t, c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("a", i)), Role: pruneguard.RoleAssistant, Tokens: 5,
			Calls: []pruneguard.Call{{ID: k, Tool: "post", Args: []byte(fmt.Sprintf(`{"n":%d}`, i))}}}))
		require.NoError(t, c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("r", i)), Role: pruneguard.RoleTool, Tokens: n,
			Content: []byte(fmt.Sprintf("receipt %d: nonce=%x", i, 0xbeef+i)), Answers: []pruneguard.CallID{k}}))
	}
	return c
}

func TestGuardSpillsThenEvicts(t *testing.T) {
	ctx := t.Context()
	sp := &spill.Spiller{Store: &spill.Memory{}}
	c := postContext(t, pruneguard.Config{Resolver: sp}, 100, 200, 300, 400)
	modelRead(t, c, "seen")
	orig := map[pruneguard.MessageID]pruneguard.Message{}
	for _, m := range c.Messages() {
		orig[m.ID] = m
	}
	// Without a store the guard cannot make room.
	nostore := postContext(t, pruneguard.Config{Resolver: sp}, 100, 200, 300, 400)
	modelRead(t, nostore, "seen")
	res, err := pruneguard.Guard{Budget: 510}.Check(nostore)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Deferred, res.Outcome)
	assert.ErrorIs(t, res.Reason, pruneguard.ErrRegen)

	res, err = pruneguard.Guard{Budget: 510, Spill: sp}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Pruned, res.Outcome)
	assert.LessOrEqual(t, res.After, 510)
	require.Len(t, res.Spills, 1, "one round, one segment: pointers grow with decisions, not messages")
	rep := res.Spills[0]
	assert.Equal(t, []pruneguard.UnitID{"a0", "a1", "a2"}, rep.Units)
	assert.Equal(t, []pruneguard.MessageID{"a0", "r0", "a1", "r1", "a2", "r2"}, rep.Messages)
	assert.Equal(t, 5+100+5+200+5+300, rep.Tokens)
	assert.Empty(t, res.SpillErrors)
	assert.Empty(t, res.Refused, "what the spill let go was not refused")
	assert.NoError(t, res.Reason)

	// Every message that went is listed with the one pointer, so the
	// runtime shows where it is, and it reads back identical.
	var evicted []pruneguard.MessageID
	for _, d := range res.Decisions {
		evicted = append(evicted, d.Evict...)
		for _, n := range d.Pointers {
			assert.Equal(t, rep.Pointer, n.Pointer)
		}
		assert.Len(t, d.Pointers, len(d.Evict)+len(d.Stub))
	}
	assert.Equal(t, rep.Messages, evicted)
	back, err := sp.Recall(ctx, rep.Pointer)
	require.NoError(t, err)
	require.Len(t, back, len(rep.Messages))
	for i, m := range back {
		o := orig[rep.Messages[i]]
		assert.Equal(t, o.ID, m.ID)
		assert.Equal(t, string(o.Content), string(m.Content))
		assert.Equal(t, o.Calls, m.Calls)
		assert.Equal(t, o.Answers, m.Answers)
	}
	_, kept := c.Message("r3")
	assert.True(t, kept, "nothing beyond what the budget needs is spilled")
	m, _ := c.Message("r3")
	assert.True(t, m.Pointer.IsZero())
}

// failingStore refuses every write.
type failingStore struct{}

var errDiskFull = errors.New("disk full")

func (*failingStore) Put(context.Context, string, []byte) error { return errDiskFull }
func (*failingStore) Get(_ context.Context, key string) ([]byte, error) {
	return nil, &spill.KeyError{Op: "get", Key: key, Err: spill.ErrNotFound}
}

func TestGuardSpillThatFailsLeavesTheUnit(t *testing.T) {
	done, cancel := context.WithCancel(t.Context())
	cancel()
	for _, tc := range []struct {
		name string
		sp   *spill.Spiller
		ctx  context.Context // nil: the test's
		want error
	}{
		{"failing store", &spill.Spiller{Store: &failingStore{}}, nil, errDiskFull},
		{"zero spiller", &spill.Spiller{}, nil, spill.ErrNoStore},
		{"done context", &spill.Spiller{Store: &spill.Memory{}}, done, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			c := postContext(t, pruneguard.Config{Resolver: tc.sp}, 100, 200)
			modelRead(t, c, "seen")
			before := state(c)
			res, err := pruneguard.Guard{Budget: 150, Spill: tc.sp}.CheckContext(ctx, c)
			require.NoError(t, err)
			assert.Equal(t, pruneguard.Deferred, res.Outcome)
			require.Len(t, res.SpillErrors, 1, "one failed spill, reported once")
			se := res.SpillErrors[0]
			assert.ErrorIs(t, se, pruneguard.ErrSpill)
			assert.ErrorIs(t, se, tc.want)
			assert.Equal(t, []pruneguard.UnitID{"a0", "a1"}, se.Units)
			assert.Equal(t, []pruneguard.MessageID{"a0", "r0", "a1", "r1"}, se.Messages)
			assert.Empty(t, res.Spills)
			assert.Len(t, res.Refused, 2, "the refusals the spill would have lifted stand, for each unit's call and result")
			assert.Equal(t, []pruneguard.UnitID{"a0", "a1"}, refusedUnits(res.Refused))
			assert.ErrorIs(t, res.Reason, pruneguard.ErrRegen)
			assert.Equal(t, before, state(c), "the units stay, with no pointer")

			// The failure is not remembered as a refusal: the next check
			// tries the store again.
			res, err = pruneguard.Guard{Budget: 150, Spill: tc.sp}.CheckContext(ctx, c)
			require.NoError(t, err)
			assert.Len(t, res.SpillErrors, 1)
		})
	}
}

// A spill whose pointer the Context's Resolver does not resolve cannot
// let anything go: it is reported, and the pointers are taken back.
func TestGuardSpillTheResolverDoesNotResolve(t *testing.T) {
	sp := &spill.Spiller{Store: &spill.Memory{}}
	other := &spill.Spiller{Store: &spill.Memory{}, Name: "elsewhere"}
	c := postContext(t, pruneguard.Config{Resolver: other}, 100, 200)
	before := state(c)
	res, err := pruneguard.Guard{Budget: 150, Spill: sp}.Check(c)
	require.NoError(t, err)
	require.Len(t, res.SpillErrors, 1)
	assert.ErrorIs(t, res.SpillErrors[0], pruneguard.ErrUnresolvedSpill)
	assert.Equal(t, before, state(c))
}

// Content a planned step names is never spilled: the step holds it.
func TestGuardNeverSpillsWhatAStepNeeds(t *testing.T) {
	sp := &spill.Spiller{Store: &spill.Memory{}}
	c := postContext(t, pruneguard.Config{Resolver: sp}, 100, 200)
	require.NoError(t, c.PlanStep("retry", "r0"))
	res, err := pruneguard.Guard{Budget: 200, Spill: sp}.Check(c)
	require.NoError(t, err)
	for _, s := range res.Spills {
		assert.NotContains(t, s.Messages, pruneguard.MessageID("r0"))
	}
	_, ok := c.Message("r0")
	assert.True(t, ok)
	m, _ := c.Message("r0")
	assert.True(t, m.Pointer.IsZero())
}

// A result refused a stub because it is irreducible is spilled and then
// stubbed: its placeholder must be the pointer's text, so the decision
// lists it in Pointers; reconstructible stubs are not listed, and only
// they may carry the stub text.
func TestGuardSpillsAResultBeforeItIsStubbed(t *testing.T) {
	sp := &spill.Spiller{Store: &spill.Memory{}}
	c := pruneguard.NewContext(pruneguard.Config{Resolver: sp})
	// The post writes elsewhere than the reads read: they stay
	// reconstructible beside it.
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "post", Scope: "outbox"}))
	require.NoError(t, c.RegisterTool(pruneguard.Tool{Name: "read", Scope: "files", Annotations: pruneguard.Annotations{
		ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "task", Role: pruneguard.RoleUser, Tokens: 10, Pinned: true}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Tokens: 5, Pinned: false,
		Calls: []pruneguard.Call{{ID: "p", Tool: "post"}, {ID: "q", Tool: "read"}, {ID: "s", Tool: "read"}}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "rp", Role: pruneguard.RoleTool, Tokens: 500, Content: []byte("id=7"), Answers: []pruneguard.CallID{"p"}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "rq", Role: pruneguard.RoleTool, Tokens: 400, Answers: []pruneguard.CallID{"q"}}))
	require.NoError(t, c.Append(pruneguard.Message{ID: "rs", Role: pruneguard.RoleTool, Tokens: 300, Answers: []pruneguard.CallID{"s"}}))
	modelRead(t, c, "seen")
	require.NoError(t, c.Append(pruneguard.Message{ID: "next", Role: pruneguard.RoleUser, Tokens: 10, Pinned: true}))

	res, err := pruneguard.Guard{Budget: 100, Spill: sp, Policy: pruneguard.LargestResultsFirst{Stub: true}}.Check(c)
	require.NoError(t, err)
	require.Len(t, res.Spills, 1)
	assert.Equal(t, []pruneguard.MessageID{"rp"}, res.Spills[0].Messages, "only the irreducible result is stored")
	pointed := map[pruneguard.MessageID]bool{}
	var stubbed []pruneguard.MessageID
	for _, d := range res.Decisions {
		stubbed = append(stubbed, d.Stub...)
		for _, n := range d.Pointers {
			pointed[n.Message] = true
		}
		for _, r := range d.Records() {
			if r.Stubbed && !pointed[r.Message] {
				assert.Equal(t, pruneguard.Reconstructible, r.Class, "%s carries the stub text: it must be reconstructible", r.Message)
			}
		}
	}
	assert.ElementsMatch(t, []pruneguard.MessageID{"rp", "rq", "rs"}, stubbed)
	assert.True(t, pointed["rp"])
	assert.False(t, pointed["rq"])
	m, _ := c.Message("rp")
	assert.Equal(t, res.Spills[0].Pointer, m.Pointer, "the stubbed message keeps its pointer")
}

// The zero value of a Spiller given as the guard's store fails every
// spill; nothing else changes.
func TestGuardZeroSpillerIsAnErrorNotAPanic(t *testing.T) {
	var sp spill.Spiller
	c := postContext(t, pruneguard.Config{Resolver: &sp}, 100)
	modelRead(t, c, "seen")
	before := state(c)
	res, err := pruneguard.Guard{Budget: 50, Spill: &sp}.Check(c)
	require.NoError(t, err)
	require.Len(t, res.SpillErrors, 1)
	assert.ErrorIs(t, res.SpillErrors[0], spill.ErrNoStore)
	assert.Equal(t, before, state(c))
}

// proseContext is a session of text a person and the model wrote, with
// no tag: seed 002's default makes all of it irreducible. A pinned system
// prompt, then rounds of a user turn and an assistant answer.
func proseContext(t testing.TB, cfg pruneguard.Config, rounds int) *pruneguard.Context {
	t.Helper()
	c := pruneguard.NewContext(cfg)
	require.NoError(t, c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 100, Pinned: true}))
	for i := range rounds {
		require.NoError(t, c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("u", i)), Role: pruneguard.RoleUser, Tokens: 100,
			Content: []byte(fmt.Sprintf("constraint %d: never touch the prod database", i))}))
		require.NoError(t, c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprint("a", i)), Role: pruneguard.RoleAssistant, Tokens: 100,
			Content: []byte(fmt.Sprintf("noted %d; checked the staging logs, nothing there", i))}))
	}
	return c
}

// Under the default text class, untagged text cannot simply go: without
// a store the guard defers, and with one it makes room by spilling the
// oldest text and evicting it behind a pointer that reads back the
// words.
func TestGuardSpillsIrreducibleText(t *testing.T) {
	ctx := t.Context()
	const budget = 450 // of 100 + 4*200 = 900
	c := proseContext(t, pruneguard.Config{}, 4)
	for _, id := range []pruneguard.MessageID{"u0", "a0"} {
		k, _ := c.ClassOf(id)
		require.Equal(t, pruneguard.Irreducible, k, "%s is text", id)
	}
	before := state(c)
	res, err := pruneguard.Guard{Budget: budget}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Deferred, res.Outcome, "no store: no safe prune reaches the budget")
	assert.ErrorIs(t, res.Reason, pruneguard.ErrRegen)
	for _, d := range res.Decisions {
		assert.Empty(t, d.Evict, "no text goes without a pointer")
	}
	assert.Equal(t, c.Tokens(), 900)
	assert.NotEqual(t, before, state(c), "the refusals are remembered")

	sp := &spill.Spiller{Store: &spill.Memory{}}
	c = proseContext(t, pruneguard.Config{Resolver: sp}, 4)
	orig := map[pruneguard.MessageID]string{}
	for _, m := range c.Messages() {
		orig[m.ID] = string(m.Content)
	}
	res, err = pruneguard.Guard{Budget: budget, Spill: sp}.Check(c)
	require.NoError(t, err)
	assert.Equal(t, pruneguard.Pruned, res.Outcome)
	assert.LessOrEqual(t, res.After, budget)
	assert.Empty(t, res.SpillErrors)
	require.NotEmpty(t, res.Spills)
	var spilled, evicted []pruneguard.MessageID
	for _, s := range res.Spills {
		spilled = append(spilled, s.Messages...)
		back, err := sp.Recall(ctx, s.Pointer)
		require.NoError(t, err)
		require.Len(t, back, len(s.Messages))
		for i, m := range back {
			assert.Equal(t, s.Messages[i], m.ID)
			assert.Equal(t, orig[m.ID], string(m.Content), "%s reads back identical", m.ID)
		}
	}
	pointed := map[pruneguard.MessageID]bool{}
	for _, d := range res.Decisions {
		evicted = append(evicted, d.Evict...)
		for _, n := range d.Pointers {
			pointed[n.Message] = true
		}
		for _, r := range d.Records() {
			assert.Equal(t, pruneguard.Irreducible, r.Class, "%s went as irreducible text", r.Message)
			assert.True(t, pointed[r.Message], "%s went behind its pointer", r.Message)
		}
	}
	assert.Equal(t, []pruneguard.MessageID{"u0", "a0", "u1", "a1", "u2"}, evicted, "oldest first, down to the budget")
	assert.Subset(t, spilled, evicted, "everything that went was spilled")
	for _, id := range []pruneguard.MessageID{"sys", "a2", "u3", "a3"} {
		m, ok := c.Message(id)
		require.True(t, ok, "%s stays", id)
		assert.True(t, m.Pointer.IsZero(), "%s was not spilled: the budget did not need it", id)
	}
}

// A spill the check made for results whose stubs the Screen then refuses
// (as a provider screen refuses stubs that would not shrink a result) is
// taken back: the results lose the pointer it recorded, and when the
// furthest safe prune evicts their units, one segment holds them with
// their calls. No message left in the prompt carries a pointer of the
// check, and every message that went carries the pointer of the decision
// that took it.
func TestGuardSpillOfARefusedStubIsTakenBack(t *testing.T) {
	ctx := t.Context()
	sp := &spill.Spiller{Store: &spill.Memory{}}
	// sys 100 (pinned), then a0 5, r0 100, a1 5, r1 200, a2 5, r2 300,
	// a3 5, r3 400: 1120 in all.
	c := postContext(t, pruneguard.Config{Resolver: sp}, 100, 200, 300, 400)
	noStubs := pruneguard.ScreenFunc(func(d *pruneguard.Decision) []*pruneguard.Violation {
		if len(d.Stub) == 0 {
			return nil
		}
		return []*pruneguard.Violation{{Gate: pruneguard.GateScreen, Code: "stub-not-smaller", Messages: d.Stub}}
	})
	res, err := pruneguard.Guard{Budget: 600, Spill: sp, Screen: noStubs, Policy: pruneguard.LargestResultsFirst{Stub: true}}.Check(c)
	require.NoError(t, err)
	require.Equal(t, pruneguard.Pruned, res.Outcome, "reason %v", res.Reason)
	require.LessOrEqual(t, res.After, 600)
	// The spill for the stubs the screen refused is dropped from the
	// result and discarded from the store: only the units' stands.
	require.Len(t, res.Spills, 1, "the spill for the refused stubs is taken back")
	keys, err := sp.Store.(spill.Lister).List(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, []string{res.Spills[0].Pointer.Key}, keys, "the store holds only the segment a pointer names")

	applied := map[pruneguard.Pointer]bool{}
	var evicted []pruneguard.MessageID
	for _, d := range res.Decisions {
		assert.Empty(t, d.Stub, "the screen refuses every stub")
		evicted = append(evicted, d.Evict...)
		require.Len(t, d.Pointers, len(d.Evict))
		for _, n := range d.Pointers {
			applied[n.Pointer] = true
		}
	}
	assert.Equal(t, []pruneguard.MessageID{"a0", "r0", "a1", "r1", "a2", "r2"}, evicted)
	require.Len(t, applied, 1, "what the furthest safe prune evicts goes in one segment")
	last := res.Spills[len(res.Spills)-1]
	assert.True(t, applied[last.Pointer])
	assert.Equal(t, evicted, last.Messages, "results and their calls, together")
	for _, m := range c.Messages() {
		assert.True(t, m.Pointer.IsZero(), "%s stayed in the prompt but carries the pointer %v", m.ID, m.Pointer)
	}
	back, err := sp.Recall(ctx, last.Pointer)
	require.NoError(t, err)
	assert.Len(t, back, len(evicted))
}

// A unit the Screen refuses after the check spilled it for its eviction
// stays in the prompt without the pointer of that spill, whether the
// screen names the unit or names nothing and refuses the whole decision.
func TestGuardSpillOfARefusedUnitIsTakenBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    pruneguard.Violation
	}{
		{"unit named", pruneguard.Violation{Gate: pruneguard.GateScreen, Code: "provider-rule", Units: []pruneguard.UnitID{"a0"}}},
		{"nothing named", pruneguard.Violation{Gate: pruneguard.GateScreen, Code: "provider-rule"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := &spill.Spiller{Store: &spill.Memory{}}
			c := postContext(t, pruneguard.Config{Resolver: sp}, 100, 200, 300, 400)
			modelRead(t, c, "seen")
			screen := pruneguard.ScreenFunc(func(d *pruneguard.Decision) []*pruneguard.Violation {
				for _, id := range d.Evict {
					if id == "a0" {
						v := tc.v
						return []*pruneguard.Violation{&v}
					}
				}
				return nil
			})
			res, err := pruneguard.Guard{Budget: 800, Spill: sp, Screen: screen}.Check(c)
			require.NoError(t, err)
			require.Equal(t, pruneguard.Pruned, res.Outcome, "reason %v", res.Reason)
			// A spill the result lists is one something went behind: the
			// segment of a decision refused whole is taken back.
			for _, sr := range res.Spills {
				left := false
				for _, id := range sr.Messages {
					_, ok := c.Message(id)
					left = left || !ok
				}
				assert.True(t, left, "the result lists spill %v, behind which nothing went", sr.Pointer)
			}
			for _, id := range []pruneguard.MessageID{"a0", "r0"} {
				m, ok := c.Message(id)
				require.True(t, ok, "%s stays", id)
				assert.True(t, m.Pointer.IsZero(), "%s stayed but carries the pointer %v", id, m.Pointer)
			}
			for _, d := range res.Decisions {
				require.Len(t, d.Pointers, len(d.Evict))
			}
			for _, m := range c.Messages() {
				assert.True(t, m.Pointer.IsZero(), "%s stayed in the prompt but carries the pointer %v", m.ID, m.Pointer)
			}
		})
	}
}

// A result the check spilled and stubbed keeps its pointer when the
// Screen later refuses to evict its unit (the budget of 1 makes the
// furthest safe prune reach every unit): only what no applied decision
// took is taken back.
func TestGuardSpillOfAnAppliedStubStands(t *testing.T) {
	sp := &spill.Spiller{Store: &spill.Memory{}}
	c := postContext(t, pruneguard.Config{Resolver: sp}, 100, 200, 300, 400)
	modelRead(t, c, "seen")
	screen := pruneguard.ScreenFunc(func(d *pruneguard.Decision) []*pruneguard.Violation {
		for _, id := range d.Evict {
			if id == "a3" {
				return []*pruneguard.Violation{{Gate: pruneguard.GateScreen, Code: "provider-rule", Units: []pruneguard.UnitID{"a3"}}}
			}
		}
		return nil
	})
	res, err := pruneguard.Guard{Budget: 1, Spill: sp, Screen: screen, Policy: pruneguard.LargestResultsFirst{Stub: true}}.Check(c)
	require.NoError(t, err)
	var stubbed []pruneguard.MessageID
	ptrs := map[pruneguard.MessageID]pruneguard.Pointer{}
	for _, d := range res.Decisions {
		stubbed = append(stubbed, d.Stub...)
		for _, n := range d.Pointers {
			ptrs[n.Message] = n.Pointer
		}
	}
	require.Contains(t, stubbed, pruneguard.MessageID("r3"))
	m, ok := c.Message("r3")
	require.True(t, ok, "the screen keeps unit a3")
	assert.False(t, ptrs["r3"].IsZero())
	assert.Equal(t, ptrs["r3"], m.Pointer, "the stub keeps the pointer it shows")
	a, _ := c.Message("a3")
	assert.True(t, a.Pointer.IsZero(), "a3 stayed but carries the pointer %v", a.Pointer)
}
