package wire_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

func appendAll(t *testing.T, s *wire.Session, msgs ...string) {
	t.Helper()
	for _, m := range msgs {
		if _, err := s.Append(json.RawMessage(m)); err != nil {
			t.Fatal(err)
		}
	}
}

// toolHistory is a Chat history with two small tool results and a large
// one, each its own unit.
func toolHistory(t *testing.T, s *wire.Session) {
	t.Helper()
	big := strings.Repeat("data ", 200)
	must(t, s.SetRequest(json.RawMessage(`{"model":"m","tools":[`+
		`{"type":"function","function":{"name":"a","parameters":{"type":"object"}}},`+
		`{"type":"function","function":{"name":"b","parameters":{"type":"object"}}}]}`)))
	appendAll(t, s,
		`{"role":"system","content":"sys"}`,
		`{"role":"user","content":"task"}`,
		`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"a","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"c1","content":"ok"}`,
		`{"role":"assistant","tool_calls":[{"id":"c2","type":"function","function":{"name":"b","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"c2","content":"`+big+`"}`,
		`{"role":"assistant","content":"done"}`,
		`{"role":"user","content":"next"}`)
}

// TestSessionScreenStubs: a stub that would not make its message smaller
// is left out and reported; the one that shrinks goes through. The
// Context is told a stub costs one token, so that the guard itself does
// not take the small stub out as freeing nothing: the screen must.
func TestSessionScreenStubs(t *testing.T) {
	pol := pruneguard.PolicyFunc(func(es []pruneguard.Entry, need int) pruneguard.Plan {
		var p pruneguard.Plan
		for _, e := range es {
			if e.Result && !e.Stubbed {
				p.Stub = append(p.Stub, e.ID)
			}
		}
		return p
	})
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 200, Policy: pol},
		Unannotated: wire.UnannotatedRegenerable, Config: pruneguard.Config{StubTokens: 1}})
	must(t, err)
	toolHistory(t, s)
	body, rep, err := s.Request()
	must(t, err)
	if fmt.Sprint(rep.Stubbed) != "[m5]" {
		t.Errorf("stubbed %v, want [m5]", rep.Stubbed)
	}
	found := false
	for _, r := range rep.Refusals {
		if r.Gate == "wire" && r.Code == wire.CodeStubNotSmaller && fmt.Sprint(r.Messages) == "[m3]" && fmt.Sprint(r.Indexes) == "[3]" {
			found = true
		}
	}
	if !found {
		t.Errorf("refusals %+v, want stub-not-smaller for m3", rep.Refusals)
	}
	if !strings.Contains(string(body), `"content":"ok"`) || !strings.Contains(string(body), pruneguard.DefaultStubText) {
		t.Errorf("body %s", body)
	}
}

// TestSessionScreenEmptyTools: withdrawing every schema would leave no
// tool declared; the screen refuses it and the tools stay.
func TestSessionScreenEmptyTools(t *testing.T) {
	pol := pruneguard.PolicyFunc(func(es []pruneguard.Entry, need int) pruneguard.Plan {
		var p pruneguard.Plan
		seen := map[pruneguard.UnitID]bool{}
		for _, e := range es {
			if !e.Pinned && !seen[e.Unit] && e.Calls > 0 {
				p.Evict = append(p.Evict, e.ID)
			}
		}
		p.DropSchemas = []string{"a", "b"}
		return p
	})
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 100, Policy: pol},
		Unannotated: wire.UnannotatedRegenerable, Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}})
	must(t, err)
	toolHistory(t, s)
	body, rep, err := s.Request()
	must(t, err)
	if len(rep.Withdrawn) != 0 || !strings.Contains(string(body), `"tools":[`) {
		t.Errorf("withdrawn %v:\n%s", rep.Withdrawn, body)
	}
	found := false
	for _, r := range rep.Refusals {
		found = found || (r.Gate == "wire" && r.Code == wire.CodeEmptyTools)
	}
	if !found || len(rep.Evicted) == 0 {
		t.Errorf("refusals %+v, evicted %v", rep.Refusals, rep.Evicted)
	}
}

// TestSessionWithdrawsSchema: a schema whose calls all left goes from the
// tools array; the others stay.
func TestSessionWithdrawsSchema(t *testing.T) {
	pol := pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan {
		p := pruneguard.OldestFirst{}.Propose(v, need)
		p.DropSchemas = []string{"a"}
		return p
	})
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 60, Policy: pol},
		Unannotated: wire.UnannotatedRegenerable, Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}})
	must(t, err)
	toolHistory(t, s)
	body, rep, err := s.Request()
	must(t, err)
	b := mustRead(t, body, wire.OpenAIChat)
	var names []string
	for _, td := range b.Tools() {
		names = append(names, td.Name)
	}
	if fmt.Sprint(rep.Withdrawn, names) != "[a] [b]" {
		t.Errorf("withdrawn %v, declared %v", rep.Withdrawn, names)
	}
	// The next request keeps it withdrawn.
	body, _, err = s.Request()
	must(t, err)
	if strings.Contains(string(body), `"name":"a"`) {
		t.Errorf("schema back: %s", body)
	}
}

// TestSessionProtectsReasoningTail: once the history carries reasoning,
// nothing from the last real user message on is proposed.
func TestSessionProtectsReasoningTail(t *testing.T) {
	big := strings.Repeat("lines ", 300)
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 50},
		Unannotated: wire.UnannotatedRegenerable, Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}})
	must(t, err)
	must(t, s.SetRequest(json.RawMessage(`{"model":"m","max_tokens":10,"thinking":{"type":"enabled","budget_tokens":1024},"tools":[{"name":"ls","input_schema":{"type":"object"}}]}`)))
	appendAll(t, s,
		`{"role":"user","content":"first task"}`,
		`{"role":"assistant","content":"earlier answer `+big+`"}`,
		`{"role":"user","content":"thanks"}`,
		`{"role":"assistant","content":"welcome"}`,
		`{"role":"user","content":"now this"}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"tool_use","id":"t1","name":"ls","input":{}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"`+big+`"}]}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"again","signature":"sig2"},{"type":"tool_use","id":"t2","name":"ls","input":{}}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"`+big+`"}]}`)
	body, rep, err := s.Request()
	must(t, err)
	// m1 and m2 go together (an assistant turn with the user turn after
	// it); m3 goes with m4, the last real user message, and stays.
	if fmt.Sprint(rep.Evicted) != "[m1 m2]" {
		t.Errorf("evicted %v, want [m1 m2]", rep.Evicted)
	}
	if vs, _ := wire.Validate(body, wire.Anthropic); len(vs) > 0 {
		t.Error(vs)
	}
}

// TestSessionCeiling: over a ceiling with nothing safely prunable, the
// request is refused with a *pruneguard.CeilingError.
func TestSessionCeiling(t *testing.T) {
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 20, Ceiling: 40}})
	must(t, err)
	// The system prompt and the task are pinned: nothing may go.
	appendAll(t, s, `{"role":"system","content":"`+strings.Repeat("rule ", 40)+`"}`, `{"role":"user","content":"task"}`)
	body, rep, err := s.Request()
	var ce *pruneguard.CeilingError
	if !errors.As(err, &ce) || body != nil || !rep.Guarded {
		t.Fatalf("body %s, err %v", body, err)
	}
	if !errors.Is(err, pruneguard.ErrCeiling) {
		t.Errorf("err %v does not match ErrCeiling", err)
	}
}

// TestSessionIDs: message ids are Responses item ids where items have
// them, positional otherwise; call ids are the provider's, positional
// where it gives none (Gemini without ids), and results without ids
// pair by position.
func TestSessionIDs(t *testing.T) {
	r, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIResponses, Guard: pruneguard.Guard{Budget: 1 << 20}})
	must(t, err)
	appendAll(t, r,
		`{"type":"message","role":"user","content":"hi"}`,
		`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{}"}`,
		`{"type":"function_call_output","call_id":"call_1","output":"x"}`)
	ids := []string{}
	for _, m := range r.Context().Messages() {
		ids = append(ids, string(m.ID))
		for _, c := range m.Calls {
			ids = append(ids, "call:"+string(c.ID))
		}
	}
	if fmt.Sprint(ids) != "[m0 fc_1 call:call_1 m2]" {
		t.Errorf("responses ids %v", ids)
	}

	g, err := wire.NewSession(wire.SessionConfig{Dialect: wire.Gemini, Guard: pruneguard.Guard{Budget: 1 << 20}})
	must(t, err)
	appendAll(t, g,
		`{"role":"user","parts":[{"text":"hi"}]}`,
		`{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}},{"functionCall":{"name":"g","args":{}}}]}`,
		`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}},{"functionResponse":{"name":"g","response":{}}}]}`)
	m1, _ := g.Context().Message("m1")
	m2, _ := g.Context().Message("m2")
	if got := fmt.Sprintln(m1.Calls[0].ID, m1.Calls[1].ID, m2.Answers); got != "m1.0 m1.1 [m1.0 m1.1]\n" {
		t.Errorf("gemini calls %v answers %v", m1.Calls, m2.Answers)
	}
	if p := g.Context().Pending(); len(p) > 0 {
		t.Errorf("pending %v", p)
	}
}

// TestRenderResults: a result answering two calls carries its text in the
// first and a line naming that call in the second; a role Render does not
// know is written as a user message; a stubbed spilled result shows the
// pointer.
func TestRenderResults(t *testing.T) {
	p := pruneguard.Pointer{Store: "spill", Key: "seg-9"}
	c := pruneguard.NewContext(pruneguard.Config{Resolver: pruneguard.ResolverFunc(func(q pruneguard.Pointer) bool { return q == p })})
	must(t, c.RegisterTool(pruneguard.Tool{Name: "f", Annotations: closedWorld}))
	for _, m := range []pruneguard.Message{
		{ID: "u", Role: pruneguard.RoleUser, Content: []byte("go")},
		{ID: "a", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "x", Tool: "f"}, {ID: "y", Tool: "f"}}},
		{ID: "r", Role: pruneguard.RoleTool, Content: []byte("both done"), Answers: []pruneguard.CallID{"x", "y"}},
		{ID: "n", Role: "narrator", Content: []byte("meanwhile")},
		{ID: "a2", Role: pruneguard.RoleAssistant, Calls: []pruneguard.Call{{ID: "z", Tool: "f"}}},
		{ID: "r2", Role: pruneguard.RoleTool, Content: []byte(strings.Repeat("big ", 100)), Answers: []pruneguard.CallID{"z"}, Tokens: 100},
		{ID: "a3", Role: pruneguard.RoleAssistant, Content: []byte("read it")},
		{ID: "u2", Role: pruneguard.RoleUser, Content: []byte("and?")},
	} {
		must(t, c.Append(m))
	}
	must(t, c.Spill("r2", p))
	d, err := c.Prune(pruneguard.Plan{Stub: []pruneguard.MessageID{"r2"}})
	must(t, err)
	must(t, c.Apply(d))
	body, err := wire.Render(wire.OpenAIChat, c, wire.RenderOptions{})
	must(t, err)
	s := string(body)
	for _, want := range []string{
		`"content":"both done","role":"tool","tool_call_id":"x"`,
		`"content":"[see the result of call x]","role":"tool","tool_call_id":"y"`,
		`"content":"meanwhile","role":"user"`,
		string(mustQuote(spill.PointerText(p)))[1:20],
	} {
		if !strings.Contains(s, want) {
			t.Errorf("body lacks %s:\n%s", want, s)
		}
	}
}

// TestSessionScreenValidates: a schema withdrawal the body would break a
// provider rule with (the tool_choice names the tool) is refused under
// that rule, and the tool stays declared.
func TestSessionScreenValidates(t *testing.T) {
	pol := pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan {
		p := pruneguard.OldestFirst{}.Propose(v, need)
		p.DropSchemas = []string{"a"}
		return p
	})
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 60, Policy: pol},
		Unannotated: wire.UnannotatedRegenerable, Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}})
	must(t, err)
	toolHistory(t, s)
	must(t, s.SetRequest(json.RawMessage(`{"model":"m","tool_choice":{"type":"function","function":{"name":"a"}},"tools":[`+
		`{"type":"function","function":{"name":"a","parameters":{"type":"object"}}},`+
		`{"type":"function","function":{"name":"b","parameters":{"type":"object"}}}]}`)))
	body, rep, err := s.Request()
	must(t, err)
	if vs, _ := wire.Validate(body, wire.OpenAIChat); len(vs) > 0 {
		t.Fatal(vs)
	}
	found := false
	for _, r := range rep.Refusals {
		found = found || (r.Gate == "wire" && r.Code == wire.RuleChatUnknownToolChoice && fmt.Sprint(r.Tools) == "[a]")
	}
	if !found || len(rep.Withdrawn) != 0 || len(rep.Evicted) == 0 {
		t.Errorf("refusals %+v, withdrawn %v, evicted %v", rep.Refusals, rep.Withdrawn, rep.Evicted)
	}
}

// TestSessionSpills: results of a tool nobody annotated are irreducible:
// without a Spiller they stay; with one they are spilled, then evicted,
// and the system prompt carries the pointer the model can follow.
func TestSessionSpills(t *testing.T) {
	ctx := t.Context()
	run := func(sp wire.Spiller) ([]byte, wire.Report) {
		s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 150}, Spiller: sp})
		must(t, err)
		toolHistory(t, s)
		body, rep, err := s.Request()
		must(t, err)
		if vs, _ := wire.Validate(body, wire.OpenAIChat); len(vs) > 0 {
			t.Fatal(vs)
		}
		return body, rep
	}
	_, rep := run(nil)
	if ev := fmt.Sprint(rep.Evicted); strings.Contains(ev, "m3") || strings.Contains(ev, "m5") {
		t.Fatalf("irreducible results evicted without a spiller: %v", rep.Evicted)
	}
	sp := &spill.Spiller{Store: &spill.Memory{}}
	body, rep := run(sp)
	if ev := fmt.Sprint(rep.Evicted); !strings.Contains(ev, "m2 m3") || !strings.Contains(ev, "m4 m5") {
		t.Fatalf("evicted %v, want both tool units", rep.Evicted)
	}
	b := mustRead(t, body, wire.OpenAIChat)
	sys := string(b.Messages[0].Raw)
	// Every spilled message's pointer has its line in the system prompt,
	// one line per pointer.
	var p pruneguard.Pointer
	ptrs := map[pruneguard.Pointer]bool{}
	spilled := 0
	for _, d := range rep.Result.Decisions {
		for _, n := range d.Pointers {
			p = n.Pointer
			ptrs[p] = true
			spilled++
		}
	}
	// With a Spiller the first user message is not pinned: it is spilled
	// and evicted like any text.
	if spilled != 5 || len(rep.Result.Spills) == 0 || !strings.Contains(fmt.Sprint(rep.Evicted), "m1") {
		t.Fatalf("%d messages spilled (evicted %v), want the task and the 4 of both tool units; spills %+v", spilled, rep.Evicted, rep.Result.Spills)
	}
	for q := range ptrs {
		if strings.Count(sys, "content moved to spill:"+q.Key) != 1 {
			t.Fatalf("no line for %v in the system prompt: %s", q, sys)
		}
	}
	if strings.Count(sys, "content moved to spill:") != len(ptrs) {
		t.Fatalf("want %d pointer lines in the system prompt: %s", len(ptrs), sys)
	}
	ms, err := sp.Recall(ctx, p)
	must(t, err)
	if len(ms) == 0 || !strings.Contains(string(ms[len(ms)-1].Content), `"role":"tool"`) {
		t.Errorf("recalled %v", ms)
	}
	if _, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 1}, Spiller: sp,
		Config: pruneguard.Config{Resolver: sp}}); !errors.Is(err, wire.ErrSessionConfig) {
		t.Errorf("Spiller and Resolver both set: %v", err)
	}
}

// A session's Logger gets a record of each spill, naming the pointer and
// never the content.
func TestSessionLogsSpills(t *testing.T) {
	var buf strings.Builder
	sp := &spill.Spiller{Store: &spill.Memory{}}
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 150}, Spiller: sp,
		Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	must(t, err)
	toolHistory(t, s)
	_, rep, err := s.Request()
	must(t, err)
	if len(rep.Result.Spills) == 0 {
		t.Fatalf("nothing spilled: %+v", rep)
	}
	logs := buf.String()
	if strings.Count(logs, `msg="pruneguard: spill"`) != len(rep.Result.Spills) || !strings.Contains(logs, rep.Result.Spills[0].Pointer.Key) {
		t.Errorf("spill records: %s", logs)
	}
	if strings.Contains(logs, "data data") {
		t.Errorf("content logged: %s", logs)
	}
}

// TestSessionSpillerUnpinsTheTask: the first real user message is pinned
// without a Spiller and not with one, whether it comes as provider JSON
// or as an event; a tool result or a later user message changes nothing.
func TestSessionSpillerUnpinsTheTask(t *testing.T) {
	for _, event := range []bool{false, true} {
		for _, withSpiller := range []bool{false, true} {
			t.Run(fmt.Sprint("event=", event, " spiller=", withSpiller), func(t *testing.T) {
				cfg := wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 1 << 20}}
				if withSpiller {
					cfg.Spiller = &spill.Spiller{Store: &spill.Memory{}}
				}
				s, err := wire.NewSession(cfg)
				must(t, err)
				add := func(raw string, m pruneguard.Message) pruneguard.MessageID {
					t.Helper()
					var id pruneguard.MessageID
					if event {
						id, err = s.AppendMessage(m)
					} else {
						id, err = s.Append(json.RawMessage(raw))
					}
					must(t, err)
					return id
				}
				sys := add(`{"role":"system","content":"sys"}`, pruneguard.Message{Role: pruneguard.RoleSystem, Content: []byte("sys")})
				task := add(`{"role":"user","content":"task"}`, pruneguard.Message{Role: pruneguard.RoleUser, Content: []byte("task")})
				next := add(`{"role":"user","content":"next"}`, pruneguard.Message{Role: pruneguard.RoleUser, Content: []byte("next")})
				c := s.Context()
				if m, _ := c.Message(sys); !m.Pinned {
					t.Errorf("the system prompt is not pinned")
				}
				if m, _ := c.Message(task); m.Pinned == withSpiller {
					t.Errorf("the task pinned %v", m.Pinned)
				}
				if m, _ := c.Message(next); m.Pinned {
					t.Errorf("a later user message is pinned")
				}
			})
		}
	}
}
