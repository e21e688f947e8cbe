package wire_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// probeDoc makes probe's schema worth withdrawing.
var probeDoc = strings.Repeat("the query, in words the index knows. ", 20)

// orphanArgs marks the arguments of the call no message answers.
var orphanArgs = "orphan-args " + strings.Repeat("lorem ipsum dolor ", 100)

// orphanBody is a body of dialect d with a call to the tool "probe"
// that no message answers, deep in the history (its block or turn ended
// without a result), and, when trailing is set, a trailing call to
// "lookup" still waiting for its result. It returns the body, the index
// of the orphan's message, and that of the trailing call's (or -1).
func orphanBody(d wire.Dialect, trailing bool) (string, int, int) {
	args := `{"q":"` + orphanArgs + `"}`
	switch d {
	case wire.OpenAIChat:
		tail, at := "", -1
		if trailing {
			tail, at = `,{"role":"assistant","content":null,"tool_calls":[{"id":"c9","type":"function","function":{"name":"lookup","arguments":"{}"}}]}`, 6
		}
		return `{"model":"m","tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}},` +
			`{"type":"function","function":{"name":"probe","parameters":{"type":"object","properties":{"q":{"type":"string","description":"` + probeDoc + `"}}}}}],"messages":[` +
			`{"role":"system","content":"sys"},{"role":"user","content":"task"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c0","type":"function","function":{"name":"probe","arguments":` + jsonString(args) + `}}]},` +
			`{"role":"user","content":"never mind"},{"role":"assistant","content":"noted"},{"role":"user","content":"next"}` + tail + `]}`, 2, at
	case wire.OpenAIResponses:
		tail, at := "", -1
		if trailing {
			tail, at = `,{"type":"function_call","call_id":"c9","name":"lookup","arguments":"{}"}`, 5
		}
		return `{"model":"m","instructions":"sys","tools":[{"type":"function","name":"lookup","parameters":{"type":"object"}},` +
			`{"type":"function","name":"probe","parameters":{"type":"object","properties":{"q":{"type":"string","description":"` + probeDoc + `"}}}}],"input":[` +
			`{"type":"message","role":"user","content":"task"},` +
			`{"type":"function_call","call_id":"c0","name":"probe","arguments":` + jsonString(args) + `},` +
			`{"type":"message","role":"user","content":"never mind"},{"type":"message","role":"assistant","content":"noted"},` +
			`{"type":"message","role":"user","content":"next"}` + tail + `]}`, 1, at
	case wire.Anthropic:
		tail, at := "", -1
		if trailing {
			tail, at = `,{"role":"assistant","content":[{"type":"tool_use","id":"c9","name":"lookup","input":{}}]}`, 5
		}
		return `{"model":"m","max_tokens":10,"system":"sys","tools":[{"name":"lookup","input_schema":{"type":"object"}},` +
			`{"name":"probe","input_schema":{"type":"object","properties":{"q":{"type":"string","description":"` + probeDoc + `"}}}}],"messages":[` +
			`{"role":"user","content":"task"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"c0","name":"probe","input":` + args + `}]},` +
			`{"role":"user","content":"never mind"},{"role":"assistant","content":"noted"},{"role":"user","content":"next"}` + tail + `]}`, 1, at
	case wire.Gemini:
		tail, at := "", -1
		if trailing {
			tail, at = `,{"role":"model","parts":[{"functionCall":{"name":"lookup","args":{}}}]}`, 5
		}
		return `{"systemInstruction":{"parts":[{"text":"sys"}]},"tools":[{"functionDeclarations":[{"name":"lookup","parameters":{"type":"object"}},` +
			`{"name":"probe","parameters":{"type":"object","properties":{"q":{"type":"string","description":"` + probeDoc + `"}}}}]}],"contents":[` +
			`{"role":"user","parts":[{"text":"task"}]},` +
			`{"role":"model","parts":[{"functionCall":{"name":"probe","args":` + args + `}}]},` +
			`{"role":"user","parts":[{"text":"never mind"}]},{"role":"model","parts":[{"text":"noted"}]},{"role":"user","parts":[{"text":"next"}]}` + tail + `]}`, 1, at
	case wire.Bedrock:
		tail, at := "", -1
		if trailing {
			tail, at = `,{"role":"assistant","content":[{"toolUse":{"toolUseId":"c9","name":"lookup","input":{}}}]}`, 5
		}
		return `{"system":[{"text":"sys"}],"toolConfig":{"tools":[{"toolSpec":{"name":"lookup","inputSchema":{"json":{"type":"object"}}}},` +
			`{"toolSpec":{"name":"probe","inputSchema":{"json":{"type":"object","properties":{"q":{"type":"string","description":"` + probeDoc + `"}}}}}}]},"messages":[` +
			`{"role":"user","content":[{"text":"task"}]},` +
			`{"role":"assistant","content":[{"toolUse":{"toolUseId":"c0","name":"probe","input":` + args + `}}]},` +
			`{"role":"user","content":[{"text":"never mind"}]},{"role":"assistant","content":[{"text":"noted"}]},{"role":"user","content":[{"text":"next"}]}` + tail + `]}`, 1, at
	}
	panic("no orphan body for " + string(d))
}

func jsonString(s string) string { return fmt.Sprintf("%q", s) }

// pureProbe annotates "probe" and "lookup" read-only and closed-world:
// their calls and results may be obtained again, and a call of one
// leaves the other's results fresh.
var pureProbe = &wire.Manifest{Tools: []wire.ManifestTool{
	{Name: "probe", Annotations: &pruneguard.Annotations{ReadOnlyHint: ptr(true), OpenWorldHint: ptr(false)}},
	{Name: "lookup", Annotations: &pruneguard.Annotations{ReadOnlyHint: ptr(true), OpenWorldHint: ptr(false)}},
}}

func ptr[T any](v T) *T { return &v }

// An unanswered call that is not in the trailing batch stays among its
// message's calls, is reported unpaired and is abandoned: it is not
// pending, its arguments count for the schema gate, and only the
// trailing batch stays pending and, under the strict boundary, defers
// every prune.
func TestOrphanCallAbandoned(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			body, at, tail := orphanBody(d, true)
			_, g := guarded(t, d, body, wire.Options{})
			m, ok := g.Context().Message(wire.ID(at))
			if !ok || len(m.Calls) != 1 || m.Calls[0].Tool != "probe" || !strings.Contains(string(m.Calls[0].Args), "orphan-args") {
				t.Fatalf("the orphan's message holds calls %+v", m.Calls)
			}
			if p := g.Context().Pending(); len(p) != 1 || p[0] == m.Calls[0].ID {
				t.Fatalf("pending %v, want the trailing call alone", p)
			}
			if tm, _ := g.Context().Message(wire.ID(tail)); len(tm.Calls) != 1 || tm.Calls[0].ID != g.Context().Pending()[0] {
				t.Fatalf("pending %v is not the trailing call %+v", g.Context().Pending(), tm.Calls)
			}
			id := "c0"
			if d == wire.Gemini {
				id = "" // its calls carry no id
			}
			if u := g.Unpaired(); !slices.Contains(u, wire.Unpaired{Index: at, CallID: id}) {
				t.Errorf("unpaired %+v", u)
			}
			if ts, _ := g.Context().Tool("probe"); ts.Args != 1 {
				t.Errorf("probe's arguments resident %d times, want 1", ts.Args)
			}
			// A result for the orphan is refused: the call was abandoned.
			err := g.Context().Append(pruneguard.Message{ID: "late", Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{m.Calls[0].ID}})
			if !errors.Is(err, pruneguard.ErrAbandonedCall) {
				t.Errorf("a late result: %v, want ErrAbandonedCall", err)
			}
		})
	}
}

// The trailing batch still defers every prune under the strict
// boundary, orphan or not; the body goes back unchanged.
func TestOrphanTrailingBatchDefers(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			body, _, tail := orphanBody(d, true)
			sp := &spill.Spiller{Store: &spill.Memory{}}
			in, g := guarded(t, d, body, wire.Options{Spiller: sp, Manifest: pureProbe})
			res, refs, err := g.Check(pruneguard.Guard{Budget: 1})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != pruneguard.Deferred || len(res.Decisions) > 0 || len(g.Body().Messages) != len(in.Messages) {
				t.Fatalf("outcome %v, %d decisions, %d of %d messages", res.Outcome, len(res.Decisions), len(g.Body().Messages), len(in.Messages))
			}
			if !slices.ContainsFunc(refs, func(r wire.Refusal) bool {
				return r.Gate == "boundary" && slices.Equal(r.Indexes, []int{tail})
			}) {
				t.Errorf("no boundary refusal naming the trailing call's message %d alone: %+v", tail, refs)
			}
		})
	}
}

// Under MCP's defaults, the orphan's unit is spilled and evicted whole
// when the budget needs it; the output breaks no rule the input kept,
// and the spill reads back as the body held it.
func TestOrphanCallUnitSpills(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			body, at, _ := orphanBody(d, false)
			sp := &spill.Spiller{Store: &spill.Memory{}}
			in, g := guarded(t, d, body, wire.Options{Spiller: sp})
			budget := g.Tokens() - 200
			res, refs, err := g.Check(pruneguard.Guard{Budget: budget})
			if err != nil {
				t.Fatal(err)
			}
			noWorse(t, in, g)
			if g.Tokens() > budget || len(res.Spills) == 0 {
				t.Fatalf("tokens %d of %d, spills %+v, refusals %+v", g.Tokens(), budget, res.Spills, refs)
			}
			if raw, _ := g.Body().Marshal(); strings.Contains(string(raw), "orphan-args") {
				t.Errorf("the orphan call is still in the body")
			}
			if !slices.ContainsFunc(res.Spills, func(s pruneguard.SpillReport) bool { return slices.Contains(s.Messages, wire.ID(at)) }) {
				t.Errorf("the orphan's message was not spilled: %+v", res.Spills)
			}
			checkRecall(t, g, history(t, d, []byte(body)), res, sp)
		})
	}
}

// With its tool annotated pure, a message of one orphan call takes the
// class of its call, as any message of calls does, and goes without a
// spill; read as text it would be irreducible. (In Chat and Responses the
// orphan's message is a unit of its own; in the other dialects its unit
// holds the user turn after it.) Under the relaxed boundary it goes
// while the trailing batch waits.
func TestOrphanCallUnitEvictsAnnotated(t *testing.T) {
	for _, d := range []wire.Dialect{wire.OpenAIChat, wire.OpenAIResponses} {
		for _, trailing := range []bool{false, true} {
			t.Run(fmt.Sprint(d, trailing), func(t *testing.T) {
				body, at, tail := orphanBody(d, trailing)
				opts := wire.Options{Manifest: pureProbe}
				if trailing {
					opts.Config.Boundary = pruneguard.BoundaryRelaxed
				}
				in, g := guarded(t, d, body, opts)
				if c, _ := g.Context().ClassOf(wire.ID(at)); c != pruneguard.Reconstructible {
					t.Fatalf("the orphan's message is %v, want reconstructible", c)
				}
				budget := g.Tokens() - 200
				res, refs, err := g.Check(pruneguard.Guard{Budget: budget})
				if err != nil {
					t.Fatal(err)
				}
				noWorse(t, in, g)
				if g.Tokens() > budget || len(res.Decisions) == 0 {
					t.Fatalf("tokens %d of %d, refusals %+v", g.Tokens(), budget, refs)
				}
				raw, _ := g.Body().Marshal()
				if strings.Contains(string(raw), "orphan-args") {
					t.Errorf("the orphan call is still in the body")
				}
				if trailing && !strings.Contains(string(raw), `"c9"`) {
					t.Errorf("the trailing call %d went: %s", tail, raw)
				}
			})
		}
	}
}

// The schema gate sees the orphan's arguments: withdrawing probe's
// schema needs a tombstone, is refused where no tombstone may be
// written, and needs none once the orphan's unit goes with it.
func TestOrphanCallHoldsSchema(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			body, at, _ := orphanBody(d, false)
			in, g := guarded(t, d, body, wire.Options{})
			dec, refs, err := g.Prune(pruneguard.Plan{DropSchemas: []string{"probe"}})
			if err != nil || dec == nil || len(dec.Tombstones) != 1 || dec.Tombstones[0].Tool != "probe" {
				t.Fatalf("decision %+v, refusals %+v, err %v: want probe withdrawn behind a tombstone", dec, refs, err)
			}
			if err := g.Apply(dec); err != nil {
				t.Fatal(err)
			}
			noWorse(t, in, g)

			_, g = guarded(t, d, body, wire.Options{Config: pruneguard.Config{NoTombstones: true}})
			dec, refs, err = g.Prune(pruneguard.Plan{DropSchemas: []string{"probe"}})
			var v *pruneguard.Violation
			if dec != nil && slices.Contains(dec.DropSchemas, "probe") {
				t.Fatalf("probe withdrawn with its arguments in the prompt and no tombstone: %+v", dec)
			}
			if !errors.As(err, &v) && !slices.ContainsFunc(refs, func(r wire.Refusal) bool { return r.Gate == "schema" }) {
				t.Fatalf("no schema refusal: err %v, refusals %+v", err, refs)
			}

			// With the orphan's unit evicted, the schema goes without a
			// tombstone.
			in, g = guarded(t, d, body, wire.Options{Manifest: pureProbe, Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}})
			dec, refs, err = g.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{wire.ID(at)}, DropSchemas: []string{"probe"}})
			if err != nil || dec == nil || !slices.Contains(dec.Evict, wire.ID(at)) || !slices.Contains(dec.DropSchemas, "probe") || len(dec.Tombstones) > 0 {
				t.Fatalf("decision %+v, refusals %+v, err %v: want the orphan evicted and probe withdrawn without a tombstone", dec, refs, err)
			}
			if err := g.Apply(dec); err != nil {
				t.Fatal(err)
			}
			noWorse(t, in, g)
		})
	}
}

// requestFields returns a body's fields other than its history.
func requestFields(t *testing.T, body string) json.RawMessage {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"messages", "input", "contents"} {
		delete(top, k)
	}
	raw, _ := json.Marshal(top)
	return raw
}

// A session abandons a call once a message fed as provider JSON ends the
// block or turn it waited in: it is pending until then, never after; the
// trailing call stays pending; a Responses call, which a later output may
// still answer, stays pending until the runtime abandons it.
func TestSessionAbandonsOrphan(t *testing.T) {
	// closes is the index of the message that ends the orphan's block or
	// turn, by dialect (-1: none).
	closes := map[wire.Dialect]int{wire.OpenAIChat: 3, wire.OpenAIResponses: -1, wire.Anthropic: 3, wire.Gemini: 2, wire.Bedrock: 2}
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			body, at, tail := orphanBody(d, true)
			s, err := wire.NewSession(wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: 1 << 20}})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SetRequest(requestFields(t, body)); err != nil {
				t.Fatal(err)
			}
			var orphan pruneguard.CallID
			for i, raw := range history(t, d, []byte(body)) {
				id, err := s.Append(raw)
				if err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
				m, _ := s.Context().Message(id)
				if i == at {
					orphan = m.Calls[0].ID
				}
				pending := slices.Contains(s.Context().Pending(), orphan)
				if want := i >= at && (closes[d] < 0 || i < closes[d]); pending != want {
					t.Fatalf("after message %d the orphan is pending: %v, want %v", i, pending, want)
				}
				if i == tail && (len(m.Calls) != 1 || !slices.Contains(s.Context().Pending(), m.Calls[0].ID)) {
					t.Fatalf("the trailing call is not pending: %v", s.Context().Pending())
				}
			}
			// The trailing call waits, and in Responses the orphan too.
			want := 1
			if closes[d] < 0 {
				want = 2
			}
			if p := s.Context().Pending(); len(p) != want {
				t.Fatalf("pending %v, want %d calls", p, want)
			}
			if closes[d] >= 0 {
				if err := s.Abandon(orphan); !errors.Is(err, pruneguard.ErrAbandonedCall) {
					t.Fatalf("abandoning the orphan again: %v, want ErrAbandonedCall", err)
				}
				return
			}
			// Responses: the runtime gives the call up; a late output for it
			// is refused.
			if err := s.Abandon(orphan); err != nil {
				t.Fatal(err)
			}
			if slices.Contains(s.Context().Pending(), orphan) {
				t.Fatalf("pending %v after Abandon", s.Context().Pending())
			}
			_, err = s.Append(json.RawMessage(`{"type":"function_call_output","call_id":"c0","output":"late"}`))
			if !errors.Is(err, pruneguard.ErrAbandonedCall) {
				t.Fatalf("a late output: %v, want ErrAbandonedCall", err)
			}
		})
	}
}

// A session holding an orphan deep in its history prunes its unit as
// Body.Bind would: spilled under MCP's defaults, the body written
// within the budget and breaking no rule the body given kept.
func TestSessionPrunesOrphanUnit(t *testing.T) {
	for _, d := range []wire.Dialect{wire.OpenAIChat, wire.Anthropic, wire.Gemini, wire.Bedrock} {
		t.Run(string(d), func(t *testing.T) {
			body, at, _ := orphanBody(d, false)
			in := read(t, d, body)
			budget := wire.Tokens(in, nil) - 200
			s, err := wire.NewSession(wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: budget}, Spiller: &spill.Spiller{Store: &spill.Memory{}}})
			if err != nil {
				t.Fatal(err)
			}
			out, rep, err := s.Sync([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(out), "orphan-args") || !slices.Contains(rep.Evicted, pruneguard.MessageID(fmt.Sprint("m", at))) {
				t.Fatalf("the orphan stayed: evicted %v, refusals %+v", rep.Evicted, rep.Refusals)
			}
			if rep.After > budget {
				t.Errorf("%d tokens over the budget %d", rep.After, budget)
			}
			if nv := wire.NewViolations(in.Validate(), read(t, d, string(out)).Validate()); len(nv) > 0 {
				t.Fatalf("the body written breaks %v", nv)
			}
		})
	}
}

// Calls made by event messages are answered by id, so a session never
// abandons them itself, even once a message fed as provider JSON ends
// their block; the runtime does, and a late result is refused.
func TestSessionEventCallsWaitForAbandon(t *testing.T) {
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []pruneguard.Message{
		{Role: pruneguard.RoleUser, Content: []byte("task")},
		{Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "e1", Tool: "probe", Args: []byte(`{}`)}}},
	} {
		if _, err := s.AppendMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	for _, raw := range []string{`{"role":"user","content":"never mind"}`, `{"role":"assistant","content":"noted"}`, `{"role":"user","content":"next"}`} {
		if _, err := s.Append(json.RawMessage(raw)); err != nil {
			t.Fatal(err)
		}
	}
	if p := s.Context().Pending(); !slices.Equal(p, []pruneguard.CallID{"e1"}) {
		t.Fatalf("pending %v, want e1", p)
	}
	if err := s.Abandon("e1"); err != nil {
		t.Fatal(err)
	}
	if p := s.Context().Pending(); len(p) > 0 {
		t.Fatalf("pending %v after Abandon", p)
	}
	_, err = s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{"e1"}, Content: []byte("late")})
	if !errors.Is(err, pruneguard.ErrAbandonedCall) {
		t.Fatalf("a late result: %v, want ErrAbandonedCall", err)
	}
	if err := s.Abandon("nope"); !errors.Is(err, pruneguard.ErrUnknownCall) {
		t.Fatalf("abandoning an unknown call: %v", err)
	}
}
