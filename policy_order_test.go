package pruneguard

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The order the built-in policies propose in.

func TestLargestResultsFirstOrder(t *testing.T) {
	c := toolLoop(t, Config{}, []string{"x"}, 50, 70, 50, 70)
	mustAppend(t, c, Message{ID: "a4", Role: RoleAssistant, Tokens: 5, Content: []byte("read them all")})
	p := LargestResultsFirst{Stub: true}.Propose(c.View(), 1000)
	assert.Equal(t, []MessageID{"r1", "r3", "r0", "r2"}, p.Stub, "ties keep transcript order")
	// Exactly enough: stop there.
	p = LargestResultsFirst{}.Propose(c.View(), 75)
	assert.Equal(t, []MessageID{"a1", "r1"}, p.Evict)
	p = OldestFirst{}.Propose(c.View(), 10)
	assert.Equal(t, []MessageID{"u0"}, p.Evict, "u0 holds exactly 10 tokens")
}

func TestOldestFirstKeepsWholeUnits(t *testing.T) {
	// The policy's own plan leaves the unit of the last message whole,
	// however much is needed.
	c := toolLoop(t, Config{}, []string{"x"}, 10, 10)
	p := OldestFirst{Keep: 1}.Propose(c.View(), c.Tokens())
	assert.Equal(t, []MessageID{"u0", "a0", "r0"}, p.Evict)

	// A guard whose budget the older units meet leaves it in place; one
	// whose budget needs it takes it too, last (see Keeper).
	c = toolLoop(t, Config{}, []string{"x"}, 10, 10)
	// sys 100 (pinned), u0 10, a0 5, r0 10, a1 5, r1 10.
	res, err := Guard{Budget: 115, Policy: OldestFirst{Keep: 1}}.Check(c)
	require.NoError(t, err)
	_, ok := c.Message("a1")
	assert.True(t, ok, "the unit of the last message stays whole")
	_, ok = c.Message("r1")
	assert.True(t, ok)
	var evicted []MessageID
	for _, d := range res.Decisions {
		evicted = append(evicted, d.Evict...)
	}
	assert.Equal(t, []MessageID{"u0", "a0", "r0"}, evicted)
}
