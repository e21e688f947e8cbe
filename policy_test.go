package pruneguard

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// toolLoop: sys(pinned) u0 (tagged reconstructible) then n rounds of
// a_i(call k_i to tool[i%len]) and r_i with the given result sizes.
func toolLoop(t *testing.T, cfg Config, tools []string, sizes ...int) *Context {
	t.Helper()
	c := NewContext(cfg)
	closedTools(t, c, tools...)
	mustAppend(t, c,
		Message{ID: "sys", Role: RoleSystem, Tokens: 100, Pinned: true},
		Message{ID: "u0", Role: RoleUser, Tokens: 10, Class: Reconstructible},
	)
	for i, n := range sizes {
		id := fmt.Sprint(i)
		mustAppend(t, c,
			Message{ID: MessageID("a" + id), Role: RoleAssistant, Tokens: 5, Calls: []Call{{ID: CallID("k" + id), Tool: tools[i%len(tools)]}}},
			Message{ID: MessageID("r" + id), Role: RoleTool, Tokens: n, Answers: []CallID{CallID("k" + id)}},
		)
	}
	return c
}

// modelReads appends the model's next message, which has no tokens: the
// model has read every message before it.
func modelReads(t *testing.T, c *Context, id MessageID) {
	t.Helper()
	mustAppend(t, c, Message{ID: id, Role: RoleAssistant, Content: []byte("read")})
}

func TestOldestFirst(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 100, 200, 300)
	p := OldestFirst{}.Propose(c.View(), 50)
	assert.Equal(t, []MessageID{"u0", "a0", "r0"}, p.Evict, "the pinned system prompt is skipped")
	p = OldestFirst{}.Propose(c.View(), 10)
	assert.Equal(t, []MessageID{"u0"}, p.Evict)
	p = OldestFirst{Keep: 4}.Propose(c.View(), 10000)
	assert.Equal(t, []MessageID{"u0", "a0", "r0"}, p.Evict, "the last four messages are kept")

	mustAppend(t, c, Message{ID: "a9", Calls: []Call{{ID: "k9", Tool: "x"}}})
	p = OldestFirst{}.Propose(c.View(), 10000)
	assert.NotContains(t, p.Evict, MessageID("a9"), "in-flight units are not proposed")
}

func TestLargestResultsFirst(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 100, 300, 200)
	modelReads(t, c, "read")
	p := LargestResultsFirst{}.Propose(c.View(), 250)
	assert.Equal(t, []MessageID{"a1", "r1"}, p.Evict)
	p = LargestResultsFirst{}.Propose(c.View(), 400)
	assert.Equal(t, []MessageID{"a1", "r1", "a2", "r2"}, p.Evict)
	p = LargestResultsFirst{Stub: true}.Propose(c.View(), 400)
	assert.Equal(t, []MessageID{"r1", "r2"}, p.Stub)
	assert.Empty(t, p.Evict)
}

func TestKeepLastToolUses(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x", "memory"}, 10, 20, 30, 40, 50, 60)
	// Results r0 (x), r1 (memory), r2 (x), r3 (memory), r4 (x), r5 (memory).
	p := KeepLastToolUses{}.Propose(c.View(), 1)
	assert.Equal(t, []MessageID{"a0", "r0", "a1", "r1", "a2", "r2"}, p.Evict, "the last three tool uses stay")
	p = KeepLastToolUses{Keep: 1, Exclude: []string{"memory"}, Stub: true}.Propose(c.View(), 1)
	assert.Equal(t, []MessageID{"r0", "r2"}, p.Stub, "memory results are never cleared, r4 is kept")
	p = KeepLastToolUses{Keep: 6}.Propose(c.View(), 1)
	assert.True(t, p.Empty())

	// After stubbing, stubbed results are not proposed again.
	d, err := c.Prune(Plan{Stub: []MessageID{"r0"}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(d))
	p = KeepLastToolUses{Keep: 3, Stub: true}.Propose(c.View(), 1)
	assert.Equal(t, []MessageID{"r1", "r2"}, p.Stub)
}

func TestKeepLastToolUsesKeepsBatchWithAKeptResult(t *testing.T) {
	c := NewContext(Config{})
	closedTools(t, c, "x")
	mustAppend(t, c,
		Message{ID: "a0", Role: RoleAssistant, Calls: []Call{{ID: "k0", Tool: "x"}}},
		Message{ID: "r0", Answers: []CallID{"k0"}},
		Message{ID: "a1", Role: RoleAssistant, Calls: []Call{{ID: "k1", Tool: "x"}, {ID: "k2", Tool: "x"}}},
		Message{ID: "r1", Answers: []CallID{"k1"}},
		Message{ID: "r2", Answers: []CallID{"k2"}},
	)
	modelReads(t, c, "read")
	p := KeepLastToolUses{Keep: 1}.Propose(c.View(), 1)
	assert.Equal(t, []MessageID{"a0", "r0"}, p.Evict, "r1 is older than the kept r2 but shares its unit")
}

func TestStubbingPoliciesSkipSmallResults(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 5, 8, 9, 300, 20, 30, 40)
	modelReads(t, c, "read")
	p := LargestResultsFirst{Stub: true}.Propose(c.View(), 1000)
	assert.Equal(t, []MessageID{"r3", "r6", "r5", "r4", "r2"}, p.Stub, "results of 8 tokens or fewer are not stubbed")
	p = LargestResultsFirst{Stub: true, MinTokens: 25}.Propose(c.View(), 1000)
	assert.Equal(t, []MessageID{"r3", "r6", "r5"}, p.Stub)
	p = LargestResultsFirst{Stub: true}.Propose(c.View(), 300)
	assert.Equal(t, []MessageID{"r3", "r6"}, p.Stub, "a stub frees its result's tokens less its own")
	p = KeepLastToolUses{Keep: 1, Stub: true}.Propose(c.View(), 1)
	assert.Equal(t, []MessageID{"r2", "r3", "r4", "r5"}, p.Stub)
	p = KeepLastToolUses{Keep: 1, Stub: true, MinTokens: 20}.Propose(c.View(), 1)
	assert.Equal(t, []MessageID{"r3", "r5"}, p.Stub)
}

// A unit holding a message newer than the oldest kept use stays whole,
// with Exclude too: KeepLastToolUses proposes nothing its Kept keeps.
func TestKeepLastToolUsesKeepsLaterMessages(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 10, 20, 30, 40, 50, 60)
	mustAppend(t, c, Message{ID: "late", Role: RoleUser, Tokens: 5, Content: []byte("about r0")})
	require.NoError(t, c.Couple("r0", "late"))
	modelReads(t, c, "read")
	for _, k := range []KeepLastToolUses{{}, {Exclude: []string{"memory"}}, {Stub: true}} {
		kept, ok := k.Kept(c.View())
		require.True(t, ok)
		assert.Equal(t, MessageID("r3"), kept, "%+v", k)
		p := k.Propose(c.View(), 1)
		if k.Stub {
			assert.Equal(t, []MessageID{"r0", "r1", "r2"}, p.Stub, "a stub of r0 leaves late")
			continue
		}
		assert.Equal(t, []MessageID{"a1", "r1", "a2", "r2"}, p.Evict, "%+v: a0 and r0 stay with late", k)
	}
}

// With Exclude, Kept names the oldest of the last Keep results of tools
// not excluded, and the oldest result when there are no more.
func TestKeepLastToolUsesKeptExcluding(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x", "memory"}, 10, 20, 30, 40, 50, 60)
	// Results r0 (x), r1 (memory), r2 (x), r3 (memory), r4 (x), r5 (memory).
	for keep, want := range map[int]MessageID{1: "r4", 2: "r2", 3: "r0", 4: "r0"} {
		k := KeepLastToolUses{Keep: keep, Exclude: []string{"memory"}}
		kept, ok := k.Kept(c.View())
		require.True(t, ok)
		assert.Equal(t, want, kept, "Keep %d", keep)
		for _, id := range k.Propose(c.View(), 1).Evict {
			assert.Less(t, id, want, "Keep %d: proposes no kept use", keep)
		}
	}
}
