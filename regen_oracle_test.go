package pruneguard_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
)

// The oracle rule: an Oracle, like a message's own Class, decides the
// class of a message in place of the derivation (tool annotations, scope
// staleness, the text default); it never lifts Facts, planned-step
// references, the pointer requirement of Durable, or anything of the
// commit boundary. Each item is tested for both, and docs/gates.md and
// package documentation are checked to say so.

// tagger answers, for each message, the class a tag in its content names;
// no tag abstains.
var tagger = pruneguard.OracleFunc(func(m pruneguard.Message) pruneguard.Class {
	switch {
	case strings.HasPrefix(string(m.Content), "free"):
		return pruneguard.Reconstructible
	case strings.HasPrefix(string(m.Content), "durable"):
		return pruneguard.Durable
	case strings.HasPrefix(string(m.Content), "keep"):
		return pruneguard.Irreducible
	}
	return pruneguard.ClassUnset
})

// both runs a check once with an Oracle deciding the class ("free",
// "durable" or "keep" content) and once with the message's own Class.
func both(t *testing.T, cfg pruneguard.Config, check func(t *testing.T, c *pruneguard.Context, m func(id string, class pruneguard.Class, content string) pruneguard.Message)) {
	t.Run("oracle", func(t *testing.T) {
		cfg := cfg
		cfg.Oracle = tagger
		check(t, pruneguard.NewContext(cfg), func(id string, class pruneguard.Class, content string) pruneguard.Message {
			tag := map[pruneguard.Class]string{pruneguard.Reconstructible: "free", pruneguard.Durable: "durable", pruneguard.Irreducible: "keep"}[class]
			return pruneguard.Message{ID: pruneguard.MessageID(id), Tokens: 10, Content: []byte(tag + " " + content)}
		})
	})
	t.Run("message class", func(t *testing.T) {
		check(t, pruneguard.NewContext(cfg), func(id string, class pruneguard.Class, content string) pruneguard.Message {
			return pruneguard.Message{ID: pruneguard.MessageID(id), Tokens: 10, Class: class, Content: []byte(content)}
		})
	})
}

func TestOracleDecidesInPlaceOfTheDerivation(t *testing.T) {
	both(t, pruneguard.Config{}, func(t *testing.T, c *pruneguard.Context, m func(string, pruneguard.Class, string) pruneguard.Message) {
		mustDo(t,
			// Mutates, so its results are irreducible by the derivation;
			// idempotent and not destructive, so an Oracle may lift them
			// (see TestOracleNeverLiftsSideEffectHints).
			c.RegisterTool(pruneguard.Tool{Name: "fetch", Annotations: pruneguard.Annotations{
				DestructiveHint: pruneguard.Bool(false), IdempotentHint: pruneguard.Bool(true)}}),
			c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: pure}),
		)
		// The text default.
		mustDo(t, c.Append(m("text", pruneguard.Reconstructible, "a user turn")))
		// Tool annotations.
		mustDo(t, c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "k1", Tool: "fetch"}}, Class: pruneguard.Reconstructible}))
		r1 := m("r1", pruneguard.Reconstructible, "fetched")
		r1.Answers = []pruneguard.CallID{"k1"}
		mustDo(t, c.Append(r1))
		// Scope staleness: a read, then a mutating call.
		mustDo(t, c.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "k2", Tool: "read_file"}}}))
		r2 := m("r2", pruneguard.Reconstructible, "read")
		r2.Answers = []pruneguard.CallID{"k2"}
		mustDo(t, c.Append(r2))
		mustDo(t, c.Append(pruneguard.Message{ID: "a3", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "k3", Tool: "fetch"}}}))
		mustDo(t, c.Append(pruneguard.Message{ID: "r3", Answers: []pruneguard.CallID{"k3"}}))
		// Stricter than the derivation: a pure, fresh read kept.
		mustDo(t, c.Append(pruneguard.Message{ID: "a4", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "k4", Tool: "read_file"}}}))
		r4 := m("r4", pruneguard.Irreducible, "read again")
		r4.Answers = []pruneguard.CallID{"k4"}
		mustDo(t, c.Append(r4))
		// The model has read every result.
		mustDo(t, c.Append(pruneguard.Message{ID: "a5", Role: pruneguard.RoleAssistant, Content: []byte("done")}))

		for _, id := range []pruneguard.MessageID{"text", "r1", "r2"} {
			assert.Equal(t, pruneguard.Reconstructible, classOf(t, c, id), id)
		}
		assert.Equal(t, pruneguard.Irreducible, classOf(t, c, "r4"))
		d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"text", "r1"}, Stub: []pruneguard.MessageID{"r2"}})
		require.NoError(t, err)
		assert.Equal(t, []pruneguard.MessageID{"text", "a1", "r1"}, d.Evict)
		assert.Equal(t, []pruneguard.MessageID{"r2"}, d.Stub)
		_, err = c.Prune(pruneguard.Plan{Stub: []pruneguard.MessageID{"r4"}})
		assert.Equal(t, []string{"r4/irreducible"}, codes(t, err))
	})
}

func TestOracleNeverLiftsFacts(t *testing.T) {
	both(t, pruneguard.Config{}, func(t *testing.T, c *pruneguard.Context, m func(string, pruneguard.Class, string) pruneguard.Message) {
		neg := m("neg", pruneguard.Reconstructible, "ulimit is unlimited")
		neg.Facts = pruneguard.NegativeResult
		mustDo(t, c.Append(neg))
		later := m("later", pruneguard.Reconstructible, "a nonce")
		mustDo(t, c.Append(later), c.Mark("later", pruneguard.OneTimeSecret))
		modelRead(t, c, "seen")
		assert.Equal(t, pruneguard.Irreducible, classOf(t, c, "neg"))
		assert.Equal(t, pruneguard.Irreducible, classOf(t, c, "later"))
		_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"neg", "later"}})
		assert.Equal(t, []string{"neg/negative-result", "later/one-time-secret"}, codes(t, err))
	})
}

func TestOracleNeverLiftsPlannedSteps(t *testing.T) {
	both(t, pruneguard.Config{}, func(t *testing.T, c *pruneguard.Context, m func(string, pruneguard.Class, string) pruneguard.Message) {
		mustDo(t, c.Append(m("x", pruneguard.Reconstructible, "input of a step")), c.PlanStep("verify", "x"))
		modelRead(t, c, "seen")
		_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"x"}})
		assert.Equal(t, []string{"x/referenced"}, codes(t, err))
		mustDo(t, c.CompleteStep("verify"))
		_, err = c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"x"}})
		assert.NoError(t, err)
	})
}

func TestOracleNeverLiftsThePointerOfDurable(t *testing.T) {
	live := map[pruneguard.Pointer]bool{{Store: "s", Key: "live"}: true}
	cfg := pruneguard.Config{Resolver: pruneguard.ResolverFunc(func(p pruneguard.Pointer) bool { return live[p] })}
	both(t, cfg, func(t *testing.T, c *pruneguard.Context, m func(string, pruneguard.Class, string) pruneguard.Message) {
		none := m("none", pruneguard.Durable, "no pointer")
		dead := m("dead", pruneguard.Durable, "a dead pointer")
		dead.Pointer = pruneguard.Pointer{Store: "s", Key: "dead"}
		ok := m("ok", pruneguard.Durable, "a live pointer")
		ok.Pointer = pruneguard.Pointer{Store: "s", Key: "live"}
		mustDo(t, c.Append(none), c.Append(dead), c.Append(ok))
		modelRead(t, c, "seen")
		assert.Equal(t, pruneguard.Durable, classOf(t, c, "none"))
		_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"none", "dead", "ok"}})
		assert.Equal(t, []string{"none/pointer-unresolvable", "dead/pointer-unresolvable"}, codes(t, err))
		d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"ok"}})
		require.NoError(t, err)
		assert.Equal(t, []pruneguard.SpillNote{{Message: "ok", Pointer: ok.Pointer}}, d.Pointers)
	})
}

func TestOracleNeverLiftsTheBoundary(t *testing.T) {
	both(t, pruneguard.Config{}, func(t *testing.T, c *pruneguard.Context, m func(string, pruneguard.Class, string) pruneguard.Message) {
		mustDo(t, c.RegisterTool(pruneguard.Tool{Name: "t", Annotations: pure}))
		pinned := m("pinned", pruneguard.Reconstructible, "system prompt")
		pinned.Pinned = true
		mustDo(t, c.Append(pinned))
		_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"pinned"}, Split: pruneguard.SplitStrict})
		assert.ErrorIs(t, err, pruneguard.ErrBoundary)
		var v *pruneguard.Violation
		require.ErrorAs(t, err, &v)
		assert.Equal(t, pruneguard.CodePinned, v.Code)

		// A pending call defers every prune, whatever the class.
		call := m("call", pruneguard.Reconstructible, "calls t")
		call.Calls = []pruneguard.Call{{ID: "k", Tool: "t"}}
		mustDo(t, c.Append(call))
		_, err = c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"call"}})
		assert.ErrorIs(t, err, pruneguard.ErrDeferred)
		// So does a streaming result.
		res := m("res", pruneguard.Reconstructible, "partial")
		res.Answers = []pruneguard.CallID{"k"}
		mustDo(t, c.Open(res))
		_, err = c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"res"}})
		assert.ErrorIs(t, err, pruneguard.ErrDeferred)
		mustDo(t, c.Close("res"))
		// Nor is what the model has not read yet released.
		_, err = c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"res"}, Split: pruneguard.SplitStrict})
		require.ErrorAs(t, err, &v)
		assert.Equal(t, pruneguard.CodeUnread, v.Code)
		// A unit goes whole, not as the class of one member says.
		mustDo(t, c.Append(m("after", pruneguard.Reconstructible, "later text")), c.Couple("res", "after"))
		modelRead(t, c, "seen")
		_, err = c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"res"}, Split: pruneguard.SplitStrict})
		require.ErrorAs(t, err, &v)
		assert.Equal(t, pruneguard.CodeSplit, v.Code)
	})
}

// The message's own class comes first: an Oracle is not asked about a
// message that has one.
func TestMessageClassBeforeOracle(t *testing.T) {
	asked := map[pruneguard.MessageID]int{}
	c := pruneguard.NewContext(pruneguard.Config{Oracle: pruneguard.OracleFunc(func(m pruneguard.Message) pruneguard.Class {
		asked[m.ID]++
		if m.ID == "abstains" {
			return pruneguard.ClassUnset
		}
		return pruneguard.Reconstructible
	})})
	mustDo(t, c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: pure}))
	mustDo(t,
		c.Append(pruneguard.Message{ID: "own", Class: pruneguard.Irreducible}),
		c.Append(pruneguard.Message{ID: "asked"}),
		c.Append(pruneguard.Message{ID: "abstains", Content: []byte("text")}),
		c.Append(pruneguard.Message{ID: "a", Calls: []pruneguard.Call{{ID: "k", Tool: "read_file"}}}),
	)
	assert.Equal(t, pruneguard.Irreducible, classOf(t, c, "own"))
	assert.Equal(t, pruneguard.Reconstructible, classOf(t, c, "asked"))
	assert.Equal(t, pruneguard.Irreducible, classOf(t, c, "abstains"), "abstaining keeps the derived class: text")
	assert.Zero(t, asked["own"])
	assert.Positive(t, asked["asked"])
	assert.Positive(t, asked["abstains"])
}

// A prune asks the Oracle once about each message it judges, evicted or
// stubbed, though both the gate and the decision's records read the
// class: the class is found once per prune.
func TestOracleAskedOncePerPrune(t *testing.T) {
	asked := map[pruneguard.MessageID]int{}
	c := pruneguard.NewContext(pruneguard.Config{Oracle: pruneguard.OracleFunc(func(m pruneguard.Message) pruneguard.Class {
		asked[m.ID]++
		return pruneguard.Reconstructible
	})})
	mustDo(t, c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: pure}))
	mustDo(t,
		c.Append(pruneguard.Message{ID: "u1", Role: pruneguard.RoleUser, Tokens: 10, Content: []byte("read them")}),
		c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Tokens: 10, Calls: []pruneguard.Call{{ID: "k1", Tool: "read_file"}}}),
		c.Append(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Tokens: 10, Answers: []pruneguard.CallID{"k1"}, Content: []byte("one")}),
		c.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Tokens: 10, Calls: []pruneguard.Call{{ID: "k2", Tool: "read_file"}}}),
		c.Append(pruneguard.Message{ID: "r2", Role: pruneguard.RoleTool, Tokens: 500, Answers: []pruneguard.CallID{"k2"}, Content: []byte("two")}),
		c.Append(pruneguard.Message{ID: "a3", Role: pruneguard.RoleAssistant, Tokens: 10, Content: []byte("read")}),
	)
	for round := range 2 {
		clear(asked)
		d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"u1", "a1"}, Stub: []pruneguard.MessageID{"r2"}})
		require.NoError(t, err)
		assert.Equal(t, []pruneguard.MessageID{"u1", "a1", "r1"}, d.Evict)
		assert.Equal(t, []pruneguard.MessageID{"r2"}, d.Stub)
		assert.Equal(t, map[pruneguard.MessageID]int{"u1": 1, "a1": 1, "r1": 1, "r2": 1}, asked, "round %d", round)
	}
}

// paragraph returns the text of path from the first line holding start
// to the next blank line, with line breaks and comment markers folded.
func paragraph(t *testing.T, path, start string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	text := string(b)
	i := strings.Index(text, start)
	require.GreaterOrEqual(t, i, 0, "%s has no %q", path, start)
	text = text[i:]
	lines := strings.Split(text, "\n")
	var out []string
	for _, l := range lines {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "//"))
		if l == "" {
			break
		}
		out = append(out, l)
	}
	return regexp.MustCompile(`\s+`).ReplaceAllString(strings.Join(out, " "), " ")
}

// docs/gates.md, the package documentation and the godoc of Oracle and
// Message.Class state the one rule the tests above check.
func TestTheOracleRuleIsDocumented(t *testing.T) {
	readme := paragraph(t, "docs/gates.md", "**The oracle rule.**")
	for _, s := range []string{
		"A custom `Oracle`, like a message's own `Class`, decides the class of a message in place of the derivation above (tool annotations, scope staleness, the text default).",
		"It can never lift `Facts` (a message with a fact is irreducible), planned-step references, the pointer requirement of `Durable` (a durable message without a resolvable pointer is refused), or anything of the commit boundary.",
	} {
		assert.Contains(t, readme, s)
	}
	doc := paragraph(t, "doc.go", "Regenerability ([ErrRegen])")
	assert.Contains(t, doc, "An [Oracle] or a [Message.Class] decides a message's class in place of that derivation, but never lifts Facts, planned-step references, the resolvable pointer a [Durable] class needs, or anything of the commit boundary.")
	oracle := paragraph(t, "regen.go", "// What an Oracle (or a Message.Class) can never lift")
	for _, s := range []string{"[Facts]", "planned-step references", "the pointer a [Durable] class needs", "anything of the commit boundary"} {
		assert.Contains(t, oracle, s)
	}
	// What only a choice for the tool or the message may lift.
	assert.Contains(t, readme, "A blanket `Config.Oracle` cannot lift MCP's side-effect hints either")
	assert.Contains(t, doc, "does not lift the results of a tool annotated destructive or not idempotent")
	hints := paragraph(t, "regen.go", "// What an Oracle alone cannot lift either")
	for _, s := range []string{"destructive, or not idempotent", "[Tool.Output]", "[Message.Class]"} {
		assert.Contains(t, hints, s)
	}
	class := paragraph(t, "message.go", "// Class, when set, is the message's regenerability class")
	assert.Contains(t, class, "Unlike an Oracle, it may lift the result of a tool with side effects")
	for _, s := range []string{"in place of the class the guard would derive (from tool annotations, scope staleness and Config.TextClass) and of any [Oracle]'s answer", "[Facts]", "planned-step references", "the pointer a [Durable] message needs", "anything of the commit boundary"} {
		assert.Contains(t, class, s)
	}
}

// What a blanket Oracle may not lift: the MCP hints that a tool's result
// is the record of a side effect. A result of a tool annotated
// destructive, or not idempotent (MCP's defaults for a tool that is not
// read-only), stays irreducible whatever Config.Oracle answers; only the
// tool's explicit Tool.Output, or the message's own Class, lifts it. A
// tool whose hints say neither (read-only, or idempotent and not
// destructive) is the Oracle's to judge, as is every text.
func TestOracleNeverLiftsSideEffectHints(t *testing.T) {
	free := pruneguard.OracleFunc(func(pruneguard.Message) pruneguard.Class { return pruneguard.Reconstructible })
	tools := []struct {
		tool   pruneguard.Tool
		lifted bool
	}{
		{pruneguard.Tool{Name: "delete_file", Annotations: pruneguard.Annotations{DestructiveHint: pruneguard.Bool(true), IdempotentHint: pruneguard.Bool(true)}}, false},
		{pruneguard.Tool{Name: "transfer_funds", Annotations: pruneguard.Annotations{DestructiveHint: pruneguard.Bool(false), IdempotentHint: pruneguard.Bool(false)}}, false},
		{pruneguard.Tool{Name: "bare"}, false}, // MCP's defaults: destructive, not idempotent
		{pruneguard.Tool{Name: "put_key", Annotations: pruneguard.Annotations{DestructiveHint: pruneguard.Bool(false), IdempotentHint: pruneguard.Bool(true)}}, true},
		{pruneguard.Tool{Name: "web_search", Annotations: openRead}, true},
		{pruneguard.Tool{Name: "wipe", Output: pruneguard.Reconstructible, Annotations: pruneguard.Annotations{DestructiveHint: pruneguard.Bool(true)}}, true},
	}
	for _, tt := range tools {
		t.Run(tt.tool.Name, func(t *testing.T) {
			c := pruneguard.NewContext(pruneguard.Config{Oracle: free})
			mustDo(t, c.RegisterTool(tt.tool),
				c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Tokens: 5, Calls: []pruneguard.Call{{ID: "k", Tool: tt.tool.Name}}}),
				c.Append(pruneguard.Message{ID: "r", Role: pruneguard.RoleTool, Tokens: 50, Content: []byte("done: 3 rows"), Answers: []pruneguard.CallID{"k"}}),
				c.Append(pruneguard.Message{ID: "s", Role: pruneguard.RoleAssistant, Tokens: 5, Content: []byte("ran it"),
					Calls: []pruneguard.Call{{ID: "ks", Tool: tt.tool.Name, Server: true}}}),
				c.Append(pruneguard.Message{ID: "end", Role: pruneguard.RoleAssistant, Tokens: 5, Content: []byte("next")}),
			)
			want := pruneguard.Irreducible
			if tt.lifted {
				want = pruneguard.Reconstructible
			}
			for _, id := range []pruneguard.MessageID{"a", "r", "s"} {
				assert.Equal(t, want, classOf(t, c, id), "%s: the call, its result, a server call's message", id)
			}
			assert.Equal(t, pruneguard.Reconstructible, classOf(t, c, "end"), "text is the Oracle's to judge")
			d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"a", "s"}})
			if tt.lifted {
				require.NoError(t, err)
				assert.Equal(t, []pruneguard.MessageID{"a", "r", "s"}, d.Evict)
				return
			}
			assert.Equal(t, []string{"a/irreducible", "r/irreducible", "s/irreducible"}, codes(t, err))
		})
	}

	// The message's own Class names one message and may lift it.
	c := pruneguard.NewContext(pruneguard.Config{Oracle: free})
	mustDo(t, c.RegisterTool(tools[0].tool),
		c.Append(pruneguard.Message{ID: "a", Role: pruneguard.RoleAssistant, Tokens: 5, Class: pruneguard.Reconstructible, Calls: []pruneguard.Call{{ID: "k", Tool: "delete_file"}}}),
		c.Append(pruneguard.Message{ID: "r", Role: pruneguard.RoleTool, Tokens: 50, Class: pruneguard.Reconstructible, Answers: []pruneguard.CallID{"k"}}),
		c.Append(pruneguard.Message{ID: "end", Role: pruneguard.RoleAssistant, Tokens: 5, Content: []byte("next")}),
	)
	_, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"a"}})
	assert.NoError(t, err)
}
