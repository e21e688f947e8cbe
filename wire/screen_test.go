package wire_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// read reads body as dialect d or fails the test.
func read(t *testing.T, d wire.Dialect, body string) *wire.Body {
	t.Helper()
	b, err := wire.Read([]byte(body), d)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return b
}

// guarded reads body and builds its Context.
func guarded(t *testing.T, d wire.Dialect, body string, opts wire.Options) (*wire.Body, *wire.Guarded) {
	t.Helper()
	b := read(t, d, body)
	g, err := b.Bind(opts)
	if err != nil {
		t.Fatalf("Context: %v", err)
	}
	return b, g
}

// noWorse fails when the guarded body breaks a rule the input kept.
func noWorse(t *testing.T, in *wire.Body, g *wire.Guarded) {
	t.Helper()
	out := g.Body()
	if nv := wire.NewViolations(in.Validate(), out.Validate()); len(nv) > 0 {
		raw, _ := out.Marshal()
		t.Fatalf("pruned body breaks %v\n%s", nv, raw)
	}
	if len(out.Messages) == 0 {
		t.Fatalf("pruned body has no history")
	}
}

// onePerRound is a policy that proposes one unit per round, the oldest
// one it is shown, so that a guarded check applies several decisions.
func onePerRound() pruneguard.Policy {
	return pruneguard.PolicyFunc(func(es []pruneguard.Entry, need int) pruneguard.Plan {
		for _, e := range es {
			if !e.Pinned && !e.Pending && !e.Open {
				var p pruneguard.Plan
				for _, f := range es {
					if f.Unit == e.Unit {
						p.Evict = append(p.Evict, f.ID)
					}
				}
				return p
			}
		}
		return pruneguard.Plan{}
	})
}

// Rounds that are each fine alone must not empty the history together:
// every round is screened against the body as the earlier rounds of the
// same check left it.
func TestCheckRoundsNeverEmptyHistory(t *testing.T) {
	bodies := map[wire.Dialect]string{
		wire.OpenAIChat:      `{"messages":[{"role":"assistant","content":"first answer, long enough to matter"},{"role":"assistant","content":"second answer, long enough to matter"}]}`,
		wire.OpenAIResponses: `{"input":[{"type":"message","role":"assistant","content":"first answer, long enough to matter"},{"type":"message","role":"assistant","content":"second answer, long enough to matter"}]}`,
	}
	for d, body := range bodies {
		t.Run(string(d), func(t *testing.T) {
			in, g := guarded(t, d, body, wire.Options{Unannotated: wire.UnannotatedRegenerable,
				Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}})
			_, refs, _ := g.Check(pruneguard.Guard{Budget: 1, Policy: onePerRound()})
			noWorse(t, in, g)
			if !slices.ContainsFunc(refs, func(r wire.Refusal) bool { return r.Gate == "wire" }) {
				t.Errorf("no wire refusal for the last unit: %+v", refs)
			}
		})
	}
}

// The fuzz input that FuzzContext found: two rounds, each keeping a tool
// message after the assistant's calls, together leave the calls last
// (pending) although the input did not end on them.
func TestCheckRoundsFuzzChat(t *testing.T) {
	body := `{"messages":[{"role":"system"},{"role":"0000"},{"role":"assistant","tool_calls":[{"id":"0","":{"000000000":"\b\b\b\b"}}]},{"role":"tool","tool_call_id":"000000","":""},{"role":"tool","tool_call_id":"1"},{"role":"0"}]}`
	in, g := guarded(t, wire.OpenAIChat, body, wire.Options{Unannotated: wire.UnannotatedRegenerable})
	g.Check(pruneguard.Guard{Budget: g.Context().Tokens() / 2, Policy: pruneguard.OldestFirst{}})
	noWorse(t, in, g)
}

// dropOnePerRound withdraws one resident declared schema per round.
func dropOnePerRound(g *wire.Guarded, names []string) pruneguard.Policy {
	return pruneguard.PolicyFunc(func([]pruneguard.Entry, int) pruneguard.Plan {
		for _, n := range names {
			if ts, ok := g.Context().Tool(n); ok && ts.Resident {
				return pruneguard.Plan{DropSchemas: []string{n}}
			}
		}
		return pruneguard.Plan{}
	})
}

// Withdrawals that are each fine alone must not empty a tools array
// together, in any dialect: some OpenAI-compatible servers reject an
// empty one.
func TestCheckRoundsNeverEmptyTools(t *testing.T) {
	desc := strings.Repeat("a long description of what the tool does. ", 6)
	bodies := map[wire.Dialect]string{
		wire.OpenAIChat: `{"tools":[{"type":"function","function":{"name":"a","description":"` + desc + `"}},{"type":"function","function":{"name":"b","description":"` + desc + `"}}],
			"messages":[{"role":"system","content":"s"},{"role":"user","content":"hello"}]}`,
		wire.OpenAIResponses: `{"instructions":"s","tools":[{"type":"function","name":"a","description":"` + desc + `"},{"type":"function","name":"b","description":"` + desc + `"}],
			"input":[{"role":"user","content":"hello"}]}`,
		wire.Anthropic: `{"system":"s","tools":[{"name":"a","description":"` + desc + `","input_schema":{"type":"object"}},{"name":"b","description":"` + desc + `","input_schema":{"type":"object"}}],
			"messages":[{"role":"user","content":"hello"}]}`,
		wire.Gemini: `{"systemInstruction":{"parts":[{"text":"s"}]},"tools":[{"functionDeclarations":[{"name":"a","description":"` + desc + `"},{"name":"b","description":"` + desc + `"}]}],
			"contents":[{"role":"user","parts":[{"text":"hello"}]}]}`,
		wire.Bedrock: `{"system":[{"text":"s"}],"toolConfig":{"tools":[{"toolSpec":{"name":"a","description":"` + desc + `","inputSchema":{"json":{}}}},{"toolSpec":{"name":"b","description":"` + desc + `","inputSchema":{"json":{}}}}]},
			"messages":[{"role":"user","content":[{"text":"hello"}]}]}`,
	}
	for d, body := range bodies {
		t.Run(string(d), func(t *testing.T) {
			in, g := guarded(t, d, body, wire.Options{})
			_, refs, _ := g.Check(pruneguard.Guard{Budget: 1, Policy: dropOnePerRound(g, []string{"a", "b"})})
			noWorse(t, in, g)
			if n := len(g.Body().Tools()); n != 1 {
				t.Errorf("%d tools left, want 1", n)
			}
			// The provider's own rule where there is one (Chat, Bedrock),
			// the screen's otherwise.
			if !slices.ContainsFunc(refs, func(r wire.Refusal) bool {
				return r.Gate == "wire" && (r.Code == wire.CodeEmptyTools || strings.HasSuffix(r.Code, "/empty-tools")) && slices.Equal(r.Tools, []string{"b"})
			}) {
				t.Errorf("no empty-tools refusal for b: %+v", refs)
			}
		})
	}
}

// The same holds for a single prune: withdrawing every declared schema is
// refused for the last one.
func TestPruneNeverEmptiesTools(t *testing.T) {
	desc := strings.Repeat("a long description of what the tool does. ", 6)
	body := `{"instructions":"s","tools":[{"type":"function","name":"a","description":"` + desc + `"}],"input":[{"role":"user","content":"hello"}]}`
	in, g := guarded(t, wire.OpenAIResponses, body, wire.Options{})
	d, refs, err := g.Prune(pruneguard.Plan{DropSchemas: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.DropSchemas) != 0 || !slices.ContainsFunc(refs, func(r wire.Refusal) bool { return r.Code == wire.CodeEmptyTools }) {
		t.Fatalf("decision drops %v, refusals %+v", d.DropSchemas, refs)
	}
	if err := g.Apply(d); err != nil {
		t.Fatal(err)
	}
	noWorse(t, in, g)
}

// After a core refusal the guard retries what is left of the plan; that
// retried plan must pass the wire screen too. Here the core refuses the
// eviction of an irreducible unit, and what is left withdraws the schema
// that tool_choice names.
func TestCheckRetriedPlanIsScreened(t *testing.T) {
	desc := strings.Repeat("a long description of what the tool does. ", 6)
	body := `{"tool_choice":{"type":"function","function":{"name":"b"}},"tools":[
		{"type":"function","function":{"name":"a","description":"` + desc + `"}},
		{"type":"function","function":{"name":"b","description":"` + desc + `"}}],
		"messages":[{"role":"system","content":"s"},{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"write","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"wrote the file with a long report of what happened"},
		{"role":"assistant","content":"done"},{"role":"user","content":"more"}]}`
	in, g := guarded(t, wire.OpenAIChat, body, wire.Options{})
	plan := pruneguard.Plan{Evict: []pruneguard.MessageID{wire.ID(2)}, DropSchemas: []string{"b"}}
	pol := pruneguard.PolicyFunc(func([]pruneguard.Entry, int) pruneguard.Plan { return plan })
	_, refs, _ := g.Check(pruneguard.Guard{Budget: 1, Policy: pol, Rounds: 3})
	noWorse(t, in, g)
	if !slices.ContainsFunc(refs, func(r wire.Refusal) bool {
		return r.Gate == "wire" && r.Code == wire.RuleChatUnknownToolChoice && slices.Equal(r.Tools, []string{"b"})
	}) {
		t.Errorf("no wire refusal of b: %+v", refs)
	}
	if !slices.ContainsFunc(refs, func(r wire.Refusal) bool { return r.Gate == "regen" }) {
		t.Errorf("the core's refusal is not reported: %+v", refs)
	}
}

// A stub retried after a core refusal is screened too: one that would not
// make its message smaller is refused, and the body never grows. The
// Context is told a stub costs one token, so that the guard itself does
// not take the stub out as freeing nothing: the wire screen must.
func TestCheckRetriedStubIsScreened(t *testing.T) {
	body := `{"system":"s","tools":[{"name":"read","input_schema":{"type":"object"},"annotations":{"readOnlyHint":true,"openWorldHint":false}}],
		"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"w","name":"write","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"w","content":"a long irreducible report of what the write did to the world"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"r","name":"read","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"r","content":"ok"}]},
		{"role":"assistant","content":"done"},{"role":"user","content":"more"}]}`
	in, g := guarded(t, wire.Anthropic, body, wire.Options{Config: pruneguard.Config{StubTokens: 1}})
	plan := pruneguard.Plan{Evict: []pruneguard.MessageID{wire.ID(1), wire.ID(2)}, Stub: []pruneguard.MessageID{wire.ID(4)}}
	pol := pruneguard.PolicyFunc(func([]pruneguard.Entry, int) pruneguard.Plan { return plan })
	_, refs, _ := g.Check(pruneguard.Guard{Budget: 1, Policy: pol, Rounds: 3})
	noWorse(t, in, g)
	if wire.Tokens(g.Body(), nil) > wire.Tokens(in, nil) {
		t.Errorf("body grew from %d to %d tokens", wire.Tokens(in, nil), wire.Tokens(g.Body(), nil))
	}
	if !slices.ContainsFunc(refs, func(r wire.Refusal) bool { return r.Code == wire.CodeStubNotSmaller }) {
		t.Errorf("no %s refusal: %+v", wire.CodeStubNotSmaller, refs)
	}
}

// Guarded.Apply screens a decision it did not make itself: one taken
// straight from the Context's Prune that would break a provider rule is
// refused with a *ScreenError, and nothing changes.
func TestApplyScreensForeignDecision(t *testing.T) {
	desc := strings.Repeat("a long description of what the tool does. ", 6)
	body := `{"tool_choice":{"type":"function","function":{"name":"b"}},"tools":[
		{"type":"function","function":{"name":"a","description":"` + desc + `"}},
		{"type":"function","function":{"name":"b","description":"` + desc + `"}}],
		"messages":[{"role":"system","content":"s"},{"role":"user","content":"go"}]}`
	in, g := guarded(t, wire.OpenAIChat, body, wire.Options{})
	d, err := g.Context().Prune(pruneguard.Plan{DropSchemas: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	err = g.Apply(d)
	var se *wire.ScreenError
	if !errors.Is(err, wire.ErrScreen) || !errors.As(err, &se) || len(se.Refusals) == 0 || se.Refusals[0].Code != wire.RuleChatUnknownToolChoice {
		t.Fatalf("Apply = %v", err)
	}
	if ts, _ := g.Context().Tool("b"); !ts.Resident {
		t.Errorf("the Context withdrew b")
	}
	noWorse(t, in, g)
	if len(g.Body().Tools()) != 2 {
		t.Errorf("the body lost a tool")
	}
	// A decision of Guarded.Prune applies as it is.
	d, _, err = g.Prune(pruneguard.Plan{DropSchemas: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Apply(d); err != nil {
		t.Fatalf("Apply of a screened decision: %v", err)
	}
	noWorse(t, in, g)
}
