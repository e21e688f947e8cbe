package pruneguard_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
)

// Black-box tests of what the regenerability gate takes as reconstructible:
// the text default, pure tools, scopes, calls the provider runs.

var (
	pure      = pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}
	openRead  = pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true)}
	mutating  = pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(false)}
	yes       = pruneguard.ResolverFunc(func(pruneguard.Pointer) bool { return true })
	somewhere = pruneguard.Pointer{Store: "scratch", Key: "k"}
)

func mustDo(t *testing.T, errs ...error) {
	t.Helper()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

func classOf(t *testing.T, c *pruneguard.Context, id pruneguard.MessageID) pruneguard.Class {
	t.Helper()
	k, ok := c.ClassOf(id)
	require.True(t, ok, "no message %s", id)
	return k
}

// codes lists the regenerability refusals of err as message/code, for
// each message a violation names (one violation names every message of
// its unit held for the same reason).
func codes(t *testing.T, err error) []string {
	t.Helper()
	var pe *pruneguard.PruneError
	require.ErrorAs(t, err, &pe)
	var out []string
	for _, v := range pe.Violations {
		for _, m := range v.Messages {
			out = append(out, string(m)+"/"+string(v.Code))
		}
	}
	return out
}

func TestTextIsIrreducibleByDefault(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{})
	texts := []pruneguard.Message{
		{ID: "sys", Role: pruneguard.RoleSystem, Content: []byte("be brief")},
		{ID: "user", Role: pruneguard.RoleUser, Content: []byte("fix the build")},
		{ID: "prose", Role: pruneguard.RoleAssistant, Content: []byte("the build fails in the linker")},
		{ID: "thought", Role: pruneguard.RoleReasoning, Content: []byte("maybe the cgo flags")},
		{ID: "bare", Role: pruneguard.RoleUser}, // neither calls nor content
		{ID: "other", Role: "developer", Content: []byte("roles are labels")},
	}
	for _, m := range texts {
		m.Tokens = 10
		mustDo(t, c.Append(m))
		assert.Equal(t, pruneguard.Irreducible, classOf(t, c, m.ID), m.ID)
	}
	_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"user", "prose"}})
	assert.ErrorIs(t, err, pruneguard.ErrRegen)
	assert.Equal(t, []string{"user/irreducible", "prose/irreducible"}, codes(t, err))

	// Tagged otherwise, it may go (once the model has read it).
	mustDo(t, c.Append(pruneguard.Message{ID: "tagged", Role: pruneguard.RoleUser, Content: []byte("ok"), Class: pruneguard.Reconstructible}))
	modelRead(t, c, "seen")
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"tagged"}})
	require.NoError(t, err)
	assert.Equal(t, []pruneguard.MessageID{"tagged"}, d.Evict)

	// The explicit option for runtimes that accept losing text.
	c = pruneguard.NewContext(pruneguard.Config{TextClass: pruneguard.Reconstructible})
	for _, m := range texts {
		mustDo(t, c.Append(m))
		assert.Equal(t, pruneguard.Reconstructible, classOf(t, c, m.ID), m.ID)
	}
	d, err = c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"user", "prose"}})
	require.NoError(t, err)
	assert.Equal(t, []pruneguard.MessageID{"user", "prose"}, d.Evict)

	// Text spilled behind a resolvable pointer, or released by a sealed
	// plan, may go under the default too.
	c = pruneguard.NewContext(pruneguard.Config{Resolver: yes})
	mustDo(t,
		c.Append(pruneguard.Message{ID: "spilled", Content: []byte("x"), Pointer: somewhere}),
		c.Append(pruneguard.Message{ID: "kept", Content: []byte("y")}),
		c.Append(pruneguard.Message{ID: "needed", Content: []byte("z")}),
	)
	modelRead(t, c, "seen")
	d, err = c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"spilled"}})
	require.NoError(t, err)
	assert.Equal(t, []pruneguard.MessageID{"spilled"}, d.Evict)
	mustDo(t, c.PlanStep("last", "needed"))
	c.SealSteps(true)
	d, err = c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"kept"}})
	require.NoError(t, err, "no remaining step needs it")
	assert.Equal(t, []pruneguard.MessageID{"kept"}, d.Evict)
	_, err = c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"needed"}})
	assert.ErrorIs(t, err, pruneguard.ErrRegen)
}

// A value of TextClass, Class, Output or an oracle's answer beyond the
// classes counts as irreducible.
func TestClassesBeyondIrreducible(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{TextClass: pruneguard.Class(7)})
	mustDo(t, c.RegisterTool(pruneguard.Tool{Name: "odd", Output: pruneguard.Class(5)}))
	mustDo(t,
		c.Append(pruneguard.Message{ID: "t", Content: []byte("x")}),
		c.Append(pruneguard.Message{ID: "m", Content: []byte("x"), Class: pruneguard.Class(200)}),
		c.Append(pruneguard.Message{ID: "a", Calls: []pruneguard.Call{{ID: "k", Tool: "odd"}}}),
		c.Append(pruneguard.Message{ID: "r", Answers: []pruneguard.CallID{"k"}}),
	)
	for _, id := range []pruneguard.MessageID{"t", "m", "a", "r"} {
		assert.Equal(t, pruneguard.Irreducible, classOf(t, c, id), id)
	}
	c = pruneguard.NewContext(pruneguard.Config{Oracle: pruneguard.OracleFunc(func(pruneguard.Message) pruneguard.Class { return 9 })})
	mustDo(t, c.Append(pruneguard.Message{ID: "o", Content: []byte("x")}))
	modelRead(t, c, "seen")
	assert.Equal(t, pruneguard.Irreducible, classOf(t, c, "o"))
	_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"o"}})
	assert.Equal(t, []string{"o/irreducible"}, codes(t, err))
}

func TestCallOnlyMessagesTakeTheClassOfTheirCalls(t *testing.T) {
	// Relaxed: the later calls stay pending while the first unit goes.
	c := pruneguard.NewContext(pruneguard.Config{Boundary: pruneguard.BoundaryRelaxed})
	mustDo(t,
		c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: pure}),
		c.RegisterTool(pruneguard.Tool{Name: "grep", Annotations: pure}),
		c.RegisterTool(pruneguard.Tool{Name: "web", Annotations: openRead}),
		c.RegisterTool(pruneguard.Tool{Name: "durable", Annotations: pure, Output: pruneguard.Durable}),
	)
	mustDo(t,
		c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "c1", Tool: "read_file"}, {ID: "c2", Tool: "grep"}}}),
		c.Append(pruneguard.Message{ID: "r1", Answers: []pruneguard.CallID{"c1"}, Content: []byte("file")}),
		c.Append(pruneguard.Message{ID: "r2", Answers: []pruneguard.CallID{"c2"}, Content: []byte("match")}),
		// Empty content is no content.
		c.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Content: []byte{}, Calls: []pruneguard.Call{{ID: "c3", Tool: "read_file"}, {ID: "c4", Tool: "web"}}}),
		c.Append(pruneguard.Message{ID: "a3", Role: pruneguard.RoleAssistant, Content: []byte("let me look"), Calls: []pruneguard.Call{{ID: "c5", Tool: "read_file"}}}),
		c.Append(pruneguard.Message{ID: "a4", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "c6", Tool: "read_file"}, {ID: "c7", Tool: "durable"}}}),
	)
	assert.Equal(t, pruneguard.Reconstructible, classOf(t, c, "a1"), "pure calls")
	assert.Equal(t, pruneguard.Irreducible, classOf(t, c, "a2"), "the most conservative of its calls")
	assert.Equal(t, pruneguard.Irreducible, classOf(t, c, "a3"), "prose beside the calls")
	assert.Equal(t, pruneguard.Durable, classOf(t, c, "a4"), "durable beats reconstructible")

	// A unit of pure calls and their results goes whole under the zero Config.
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
	require.NoError(t, err)
	assert.Equal(t, []pruneguard.MessageID{"a1", "r1", "r2"}, d.Evict)
	for _, r := range d.Records() {
		assert.Equal(t, pruneguard.Reconstructible, r.Class, r.Message)
	}
}

func TestOnlyReadOnlyClosedWorldToolsArePure(t *testing.T) {
	tests := []struct {
		name string
		tool pruneguard.Tool
		want pruneguard.Class
	}{
		{"read-only closed-world", pruneguard.Tool{Annotations: pure}, pruneguard.Reconstructible},
		{"read-only open-world", pruneguard.Tool{Annotations: openRead}, pruneguard.Irreducible},
		{"unannotated", pruneguard.Tool{}, pruneguard.Irreducible},
		{"idempotent, additive, closed-world, mutating", pruneguard.Tool{Annotations: pruneguard.Annotations{
			ReadOnlyHint: pruneguard.Bool(false), DestructiveHint: pruneguard.Bool(false),
			IdempotentHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}, pruneguard.Irreducible},
		{"destructive", pruneguard.Tool{Annotations: pruneguard.Annotations{DestructiveHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}, pruneguard.Irreducible},
		{"explicit output on a mutating tool", pruneguard.Tool{Annotations: mutating, Output: pruneguard.Reconstructible}, pruneguard.Reconstructible},
		{"explicit output on a pure tool", pruneguard.Tool{Annotations: pure, Output: pruneguard.Irreducible}, pruneguard.Irreducible},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.tool.OutputClass())
			c := pruneguard.NewContext(pruneguard.Config{})
			tt.tool.Name = "t"
			mustDo(t, c.RegisterTool(tt.tool))
			mustDo(t,
				c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "k", Tool: "t"}}}),
				c.Append(pruneguard.Message{ID: "r", Answers: []pruneguard.CallID{"k"}}),
			)
			modelRead(t, c, "seen")
			assert.Equal(t, tt.want, classOf(t, c, "r"))
			d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r"}})
			if tt.want == pruneguard.Reconstructible {
				require.NoError(t, err)
				assert.Equal(t, []pruneguard.MessageID{"a", "r"}, d.Evict)
			} else {
				assert.ErrorIs(t, err, pruneguard.ErrRegen)
			}
		})
	}
}

// scoped is a Context with a read_file (scope fs), a sql read (scope db),
// a read of everything (scope empty) and writers of each scope.
func scoped(t *testing.T) *pruneguard.Context {
	t.Helper()
	c := pruneguard.NewContext(pruneguard.Config{})
	mustDo(t,
		c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: pure, Scope: "fs"}),
		c.RegisterTool(pruneguard.Tool{Name: "query", Annotations: pure, Scope: "db"}),
		c.RegisterTool(pruneguard.Tool{Name: "snapshot", Annotations: pure}),
		c.RegisterTool(pruneguard.Tool{Name: "write_file", Annotations: mutating, Scope: "fs"}),
		c.RegisterTool(pruneguard.Tool{Name: "migrate", Annotations: mutating, Scope: "db"}),
		c.RegisterTool(pruneguard.Tool{Name: "shell", Annotations: mutating}),
		c.RegisterTool(pruneguard.Tool{Name: "search", Annotations: openRead}),
	)
	return c
}

// turn appends a call-only assistant message and one result per call.
func turn(t *testing.T, c *pruneguard.Context, id string, tools ...string) {
	t.Helper()
	m := pruneguard.Message{ID: pruneguard.MessageID(id), Role: pruneguard.RoleAssistant}
	for i, tool := range tools {
		m.Calls = append(m.Calls, pruneguard.Call{ID: pruneguard.CallID(fmt.Sprintf("%s.%d", id, i)), Tool: tool})
	}
	mustDo(t, c.Append(m))
	for i := range tools {
		mustDo(t, c.Append(pruneguard.Message{ID: pruneguard.MessageID(fmt.Sprintf("%s.r%d", id, i)), Role: pruneguard.RoleTool, Tokens: 10,
			Answers: []pruneguard.CallID{pruneguard.CallID(fmt.Sprintf("%s.%d", id, i))}}))
	}
}

func TestReadsGoStaleAfterAMutationOfTheirScope(t *testing.T) {
	stale := func(t *testing.T, c *pruneguard.Context, id string) bool {
		t.Helper()
		return classOf(t, c, pruneguard.MessageID(id)) == pruneguard.Irreducible
	}
	t.Run("a write after the read", func(t *testing.T) {
		c := scoped(t)
		turn(t, c, "read", "read_file")
		assert.False(t, stale(t, c, "read.r0"))
		turn(t, c, "write", "write_file")
		assert.True(t, stale(t, c, "read.r0"), "re-reading the file may give other bytes")
		assert.True(t, stale(t, c, "read"), "the call goes with its result")
		_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"read"}})
		assert.Equal(t, []string{"read/irreducible", "read.r0/irreducible"}, codes(t, err))
	})
	t.Run("a read after the write", func(t *testing.T) {
		c := scoped(t)
		turn(t, c, "write", "write_file")
		turn(t, c, "read", "read_file")
		assert.False(t, stale(t, c, "read.r0"))
	})
	t.Run("scopes that do not overlap", func(t *testing.T) {
		c := scoped(t)
		turn(t, c, "read", "read_file", "query")
		turn(t, c, "m", "migrate")
		assert.False(t, stale(t, c, "read.r0"), "a migration does not touch files")
		assert.True(t, stale(t, c, "read.r1"))
	})
	t.Run("the empty scope overlaps every scope", func(t *testing.T) {
		c := scoped(t)
		turn(t, c, "read", "read_file", "query", "snapshot")
		turn(t, c, "sh", "shell")
		assert.True(t, stale(t, c, "read.r0"))
		assert.True(t, stale(t, c, "read.r1"))
		assert.True(t, stale(t, c, "read.r2"))

		c = scoped(t)
		turn(t, c, "read", "snapshot")
		turn(t, c, "w", "write_file")
		assert.True(t, stale(t, c, "read.r0"), "a read of everything goes stale on any write")
	})
	t.Run("a parallel batch", func(t *testing.T) {
		c := scoped(t)
		turn(t, c, "b1", "read_file", "write_file")
		turn(t, c, "b2", "write_file", "read_file")
		turn(t, c, "b3", "query", "write_file")
		assert.True(t, stale(t, c, "b1.r0"))
		assert.True(t, stale(t, c, "b2.r1"), "the batch runs in no known order")
		assert.False(t, stale(t, c, "b3.r0"))
	})
	t.Run("a mutating call counts once made, answered or not", func(t *testing.T) {
		c := scoped(t)
		turn(t, c, "read", "read_file")
		mustDo(t, c.Append(pruneguard.Message{ID: "w", Calls: []pruneguard.Call{{ID: "k", Tool: "write_file"}}}))
		assert.True(t, stale(t, c, "read.r0"))
		require.NoError(t, c.Abandon("k"))
		assert.True(t, stale(t, c, "read.r0"), "abandoned, it may still have run")
	})
	t.Run("a call given at Close is in its batch", func(t *testing.T) {
		c := scoped(t)
		mustDo(t,
			c.Open(pruneguard.Message{ID: "s", Calls: []pruneguard.Call{{ID: "k1", Tool: "query"}}}),
			c.Append(pruneguard.Message{ID: "w", Calls: []pruneguard.Call{{ID: "k2", Tool: "write_file"}}}),
			c.Append(pruneguard.Message{ID: "wr", Answers: []pruneguard.CallID{"k2"}}),
			c.Close("s", pruneguard.Call{ID: "k3", Tool: "read_file"}),
			c.Append(pruneguard.Message{ID: "r1", Answers: []pruneguard.CallID{"k1"}}),
			c.Append(pruneguard.Message{ID: "r3", Answers: []pruneguard.CallID{"k3"}}),
		)
		assert.False(t, stale(t, c, "r1"), "another scope")
		assert.True(t, stale(t, c, "r3"), "the write was made while its batch streamed")
	})
	t.Run("reads and open-world reads are no mutation", func(t *testing.T) {
		c := scoped(t)
		turn(t, c, "read", "read_file")
		turn(t, c, "more", "read_file", "snapshot", "search")
		assert.False(t, stale(t, c, "read.r0"))
	})
	t.Run("an unregistered tool mutates everything", func(t *testing.T) {
		c := scoped(t)
		turn(t, c, "read", "read_file")
		turn(t, c, "x", "mystery")
		assert.True(t, stale(t, c, "read.r0"))
	})
	t.Run("the class as the registry says now", func(t *testing.T) {
		c := scoped(t)
		turn(t, c, "read", "read_file")
		turn(t, c, "x", "mystery")
		assert.True(t, stale(t, c, "read.r0"))
		mustDo(t, c.RegisterTool(pruneguard.Tool{Name: "mystery", Annotations: openRead}))
		assert.False(t, stale(t, c, "read.r0"), "mystery is a read after all")
		mustDo(t, c.RegisterTool(pruneguard.Tool{Name: "mystery", Annotations: mutating, Scope: "db"}))
		assert.False(t, stale(t, c, "read.r0"), "mystery writes the database only")
		mustDo(t, c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: pure, Scope: "db"}))
		assert.True(t, stale(t, c, "read.r0"), "read_file now reads what mystery writes")
	})
	t.Run("an explicit output class of a read-only tool goes stale too", func(t *testing.T) {
		c := scoped(t)
		mustDo(t,
			c.RegisterTool(pruneguard.Tool{Name: "cat", Annotations: openRead, Output: pruneguard.Reconstructible, Scope: "fs"}),
			c.RegisterTool(pruneguard.Tool{Name: "render", Annotations: mutating, Output: pruneguard.Reconstructible, Scope: "fs"}),
		)
		turn(t, c, "r", "cat", "render")
		turn(t, c, "w", "write_file")
		assert.True(t, stale(t, c, "r.r0"))
		assert.False(t, stale(t, c, "r.r1"), "a mutating tool's declared class is not a read's")
	})
	t.Run("a decision's records show the stale class", func(t *testing.T) {
		c := pruneguard.NewContext(pruneguard.Config{Resolver: yes})
		mustDo(t,
			c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: pure}),
			c.RegisterTool(pruneguard.Tool{Name: "write_file", Annotations: mutating}),
		)
		turn(t, c, "read", "read_file")
		modelRead(t, c, "seen")
		d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"read"}})
		require.NoError(t, err)
		assert.Equal(t, pruneguard.Reconstructible, d.Records()[1].Class)
		turn(t, c, "w", "write_file")
		mustDo(t, c.Spill("read", somewhere), c.Spill("read.r0", somewhere))
		d, err = c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"read"}})
		require.NoError(t, err, "spilled, it may go")
		assert.Equal(t, pruneguard.Irreducible, d.Records()[1].Class)
	})
}

// The latest mutation of each scope survives the pruning of its call and
// the compaction of the records that follows.
func TestStalenessSurvivesPruningTheWrite(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{TextClass: pruneguard.Reconstructible})
	mustDo(t,
		c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: pure, Scope: "fs"}),
		c.RegisterTool(pruneguard.Tool{Name: "write_file", Annotations: mutating, Output: pruneguard.Reconstructible, Scope: "fs"}),
		c.RegisterTool(pruneguard.Tool{Name: "query", Annotations: pure, Scope: "db"}),
	)
	turn(t, c, "read", "read_file")
	turn(t, c, "w", "write_file")
	turn(t, c, "late", "read_file")
	// Enough messages go that the Context compacts its records.
	var filler []pruneguard.MessageID
	for i := range 600 {
		id := fmt.Sprintf("q%d", i)
		turn(t, c, id, "query")
		filler = append(filler, pruneguard.MessageID(id))
	}
	d, err := c.Prune(pruneguard.Plan{Evict: append(filler, "w")})
	require.NoError(t, err)
	mustDo(t, c.Apply(d))
	_, ok := c.Message("w")
	require.False(t, ok)
	assert.Equal(t, pruneguard.Irreducible, classOf(t, c, "read.r0"), "the write happened, pruned or not")
	assert.Equal(t, pruneguard.Reconstructible, classOf(t, c, "late.r0"), "the read after it")
	// A second compaction moves the place the write held again.
	filler = filler[:0]
	for i := range 600 {
		id := fmt.Sprintf("p%d", i)
		turn(t, c, id, "query")
		filler = append(filler, pruneguard.MessageID(id))
	}
	d, err = c.Prune(pruneguard.Plan{Evict: filler})
	require.NoError(t, err)
	mustDo(t, c.Apply(d))
	assert.Equal(t, pruneguard.Irreducible, classOf(t, c, "read.r0"))
	assert.Equal(t, pruneguard.Reconstructible, classOf(t, c, "late.r0"))
	turn(t, c, "after", "read_file")
	assert.Equal(t, pruneguard.Reconstructible, classOf(t, c, "after.r0"))
	turn(t, c, "w2", "write_file")
	assert.Equal(t, pruneguard.Irreducible, classOf(t, c, "late.r0"))
	assert.Equal(t, pruneguard.Irreducible, classOf(t, c, "after.r0"))
}

func TestServerCalls(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{NoTombstones: true})
	mustDo(t,
		c.RegisterTool(pruneguard.Tool{Name: "web_search", Annotations: openRead, Schema: json.RawMessage(`{"type":"object"}`)}),
		c.RegisterTool(pruneguard.Tool{Name: "calc", Annotations: pure}),
	)
	search := pruneguard.Call{ID: "srv1", Tool: "web_search", Args: json.RawMessage(`{"query":"go 1.26"}`), Server: true}
	mustDo(t,
		c.Append(pruneguard.Message{ID: "u", Role: pruneguard.RoleUser, Content: []byte("what is new?")}),
		// The call and its result in one assistant message, no prose.
		c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Tokens: 900, Calls: []pruneguard.Call{search}}),
		c.Append(pruneguard.Message{ID: "b", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "srv2", Tool: "calc", Server: true}}}),
	)
	assert.True(t, c.Settled(), "a server call is never pending")
	assert.Empty(t, c.Pending())
	u, _ := c.UnitOf("a")
	assert.Empty(t, u.Pending)
	assert.Equal(t, []pruneguard.MessageID{"a"}, u.Messages, "no other message belongs to it")
	assert.Equal(t, pruneguard.Irreducible, classOf(t, c, "a"), "web search is open-world")
	assert.Equal(t, pruneguard.Reconstructible, classOf(t, c, "b"), "a pure tool's result")
	_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"a"}})
	assert.Equal(t, []string{"a/irreducible"}, codes(t, err))

	m, _ := c.Message("a")
	assert.Equal(t, []pruneguard.Call{search}, m.Calls)
	e := c.Snapshot()[1]
	assert.Equal(t, []string{"web_search"}, e.Tools)
	assert.False(t, e.Pending)

	// No other message may answer it.
	err = c.Append(pruneguard.Message{ID: "r", Answers: []pruneguard.CallID{"srv1"}})
	assert.ErrorIs(t, err, pruneguard.ErrDuplicateResult)
	assert.ErrorIs(t, c.Abandon("srv1"), pruneguard.ErrAnsweredCall)

	// Not an argument residency: the schema may leave without a tombstone,
	// even where none can be inserted.
	st, _ := c.Tool("web_search")
	assert.Equal(t, 0, st.Args)
	d, err := c.Prune(pruneguard.Plan{DropSchemas: []string{"web_search"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"web_search"}, d.DropSchemas)
	assert.Empty(t, d.Tombstones)
	mustDo(t, c.Apply(d))

	// A use of the tool's name: counted as a ghost call once the schema is
	// gone, and the registry knows a tool met only in a server call.
	mustDo(t, c.Append(pruneguard.Message{ID: "a2", Calls: []pruneguard.Call{search, {ID: "srv3", Tool: "code_exec", Server: true}}}))
	st, _ = c.Tool("web_search")
	assert.Equal(t, 1, st.GhostCalls)
	ce, ok := c.Tool("code_exec")
	require.True(t, ok)
	assert.False(t, ce.Registered)
	assert.Equal(t, 0, ce.Args)
	assert.Equal(t, pruneguard.Irreducible, classOf(t, c, "a2"))
}

// A server call whose message was pruned, made again with the same
// arguments, is a refetch.
func TestServerCallRefetch(t *testing.T) {
	c := pruneguard.NewContext(pruneguard.Config{Resolver: yes})
	mustDo(t, c.RegisterTool(pruneguard.Tool{Name: "web_search", Annotations: openRead}))
	search := pruneguard.Call{ID: "s1", Tool: "web_search", Args: json.RawMessage(`{"query":"ulimit"}`), Server: true}
	mustDo(t, c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{search}, Pointer: somewhere}))
	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"a"}})
	require.NoError(t, err)
	mustDo(t, c.Apply(d))
	search.ID = "s2"
	mustDo(t, c.Append(pruneguard.Message{ID: "b", Calls: []pruneguard.Call{search}}))
	st, _ := c.Tool("web_search")
	assert.Equal(t, 1, st.Refetches)
	assert.Equal(t, 1, st.IrreducibleRefetches)
}

// The text default and the server call's class add up: prose is text, and
// a server call's open-world result stays irreducible even where text may
// go.
func TestServerCallsBesideProse(t *testing.T) {
	for _, text := range []pruneguard.Class{pruneguard.ClassUnset, pruneguard.Reconstructible} {
		c := pruneguard.NewContext(pruneguard.Config{TextClass: text})
		mustDo(t,
			c.RegisterTool(pruneguard.Tool{Name: "web_search", Annotations: openRead}),
			c.RegisterTool(pruneguard.Tool{Name: "calc", Annotations: pure}),
		)
		mustDo(t,
			c.Append(pruneguard.Message{ID: "a", Content: []byte("I searched"), Calls: []pruneguard.Call{{ID: "s", Tool: "web_search", Server: true}}}),
			c.Append(pruneguard.Message{ID: "b", Content: []byte("I computed"), Calls: []pruneguard.Call{{ID: "k", Tool: "calc", Server: true}}}),
		)
		assert.Equal(t, pruneguard.Irreducible, classOf(t, c, "a"))
		want := pruneguard.Irreducible
		if text == pruneguard.Reconstructible {
			want = pruneguard.Reconstructible
		}
		assert.Equal(t, want, classOf(t, c, "b"))
	}
}

// A server call that is not pure would make every earlier read stale, as
// any mutating call: register server tools with their annotations.
func TestServerCallsMutateLikeAnyCall(t *testing.T) {
	c := scoped(t)
	turn(t, c, "read", "read_file")
	mustDo(t, c.Append(pruneguard.Message{ID: "s", Calls: []pruneguard.Call{{ID: "x", Tool: "shell", Server: true}}}))
	assert.Equal(t, pruneguard.Irreducible, classOf(t, c, "read.r0"))
	assert.True(t, errors.Is(c.Abandon("x"), pruneguard.ErrAnsweredCall))
}
