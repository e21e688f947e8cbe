package wire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// byteCounter counts a byte as a token, so that tests can tell what was
// counted.
type byteCounter struct{}

func (byteCounter) Count(b []byte) int { return len(b) }

// toolBody is an Anthropic body with a system prompt, two tools and a
// few rounds of calls and results.
const toolBody = `{"model":"m","max_tokens":9,"system":"be brief",
	"tools":[{"name":"read","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}},{"name":"grep","input_schema":{"type":"object"}}],
	"messages":[{"role":"user","content":"fix it"},
	{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{"path":"a.go"}}]},
	{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"` + "package a; func A() {} // a long file of code " + `"}]},
	{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"read","input":{"path":"b.go"}}]},
	{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"` + "package b; func B() {} // another long file of code" + `"}]},
	{"role":"assistant","content":"done"},{"role":"user","content":"thanks"}]}`

// The Counter counts each message once as its JSON and the rest of the
// body; the Context, given it, counts the messages so counted and the
// tool schemas; what it does not count is the Overhead.
func TestCounterCountsEachPartOnce(t *testing.T) {
	b := read(t, wire.Anthropic, toolBody)
	g, err := b.Bind(wire.Options{Config: pruneguard.Config{Counter: byteCounter{}}})
	must(t, err)
	msgs, schemas := 0, 0
	for _, m := range b.Messages {
		msgs += len(m.Raw)
	}
	for _, td := range b.Tools() {
		schemas += len(td.Schema)
	}
	if got := g.Context().Tokens(); got != msgs+schemas {
		t.Errorf("the Context counts %d, want the messages %d and the schemas %d", got, msgs, schemas)
	}
	whole := wire.Tokens(b, byteCounter{})
	if g.Tokens() != whole || whole != msgs+wire.Overhead(b, byteCounter{}) {
		t.Errorf("Tokens %d, Tokens of the body %d, messages and the rest %d", g.Tokens(), whole, msgs+wire.Overhead(b, byteCounter{}))
	}
	if g.Overhead() != g.Tokens()-g.Context().Tokens() {
		t.Errorf("Overhead %d", g.Overhead())
	}
	// The approximate counter counts the compact JSON: whitespace between
	// tokens is free.
	spaced := strings.ReplaceAll(toolBody, `,"`, `,  "`)
	if wire.Tokens(read(t, wire.Anthropic, spaced), nil) != wire.Tokens(b, pruneguard.ApproxCounter{}) {
		t.Errorf("whitespace counted")
	}
}

// Guarded.Check's budget covers the whole body: what it leaves is within
// it, as Tokens of the body written says, and Result reports the body's
// tokens.
func TestGuardedCheckBudgetCoversTheBody(t *testing.T) {
	for _, c := range []struct {
		d    wire.Dialect
		body []byte
	}{{wire.Anthropic, bigAnthropic(20)}, {wire.OpenAIChat, chatSession(200)}} {
		b := read(t, c.d, string(c.body))
		// Text the test means to prune is taken as reconstructible.
		g, err := b.Bind(wire.Options{Unannotated: wire.UnannotatedRegenerable,
			Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}})
		must(t, err)
		before := wire.Tokens(b, nil)
		budget := before * 2 / 3
		res, _, err := g.Check(pruneguard.Guard{Budget: budget})
		must(t, err)
		after := wire.Tokens(g.Body(), nil)
		if res.Before != before || res.After != after || g.Tokens() != after || after > budget || res.Outcome != pruneguard.Pruned {
			t.Errorf("%s: budget %d: result %d -> %d (%v), Tokens %d, body %d", c.d, budget, res.Before, res.After, res.Outcome, g.Tokens(), after)
		}
		var buf bytes.Buffer
		if _, err := g.WriteTo(&buf); err != nil || wire.Tokens(read(t, c.d, buf.String()), nil) != after {
			t.Errorf("%s: WriteTo: %v", c.d, err)
		}
	}
}

// A ceiling counts the whole body too; the error says the body's tokens
// and the ceiling given.
func TestGuardedCheckCeiling(t *testing.T) {
	b := read(t, wire.Anthropic, toolBody)
	g, err := b.Bind(wire.Options{}) // unannotated tools: irreducible results
	must(t, err)
	before := g.Tokens()
	res, _, err := g.Check(pruneguard.Guard{Budget: before / 2, Ceiling: before - 1})
	var ce *pruneguard.CeilingError
	if !errors.As(err, &ce) || ce.Tokens != g.Tokens() || ce.Ceiling != before-1 {
		t.Fatalf("err %v", err)
	}
	// What fills the prompt is said, in the Result as in the error.
	if res.Held.IsZero() || res.Held != ce.Held {
		t.Errorf("held %+v, error's %+v", res.Held, ce.Held)
	}
}

// A session counts with its Counter: an event message with no tokens is
// counted as written, and the report is the body's count.
func TestSessionCounter(t *testing.T) {
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 1 << 20},
		Config: pruneguard.Config{Counter: byteCounter{}}})
	must(t, err)
	id, err := s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleUser, Content: []byte("hello")})
	must(t, err)
	if id != "m0" {
		t.Errorf("positional id %q", id)
	}
	m, _ := s.Context().Message(id)
	if want := len(`{"content":"hello","role":"user"}`); m.Tokens != want {
		t.Errorf("event counted %d, want %d", m.Tokens, want)
	}
	body, rep, err := s.Request()
	must(t, err)
	if rep.Before != wire.Tokens(read(t, wire.OpenAIChat, string(body)), byteCounter{}) || rep.After != rep.Before {
		t.Errorf("report %d -> %d for %s", rep.Before, rep.After, body)
	}
}

// Check guards without writing; WriteTo writes what Request returns.
func TestSessionCheckThenWriteTo(t *testing.T) {
	all := chatTurns(30, 80)
	mk := func() *wire.Session {
		s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIChat, Guard: pruneguard.Guard{Budget: 500},
			Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}})
		must(t, err)
		for _, m := range all {
			_, err := s.Append(m)
			must(t, err)
		}
		return s
	}
	a, b := mk(), mk()
	want, wrep, err := a.Request()
	must(t, err)
	rep, err := b.Check()
	must(t, err)
	var buf bytes.Buffer
	if _, err := b.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) || !rep.Guarded || rep.After != wrep.After || rep.After > 500 {
		t.Errorf("Check+WriteTo differ from Request: %+v vs %+v", rep, wrep)
	}
	// Under the trigger, nothing changes: the same bytes again.
	buf.Reset()
	if _, err := b.Check(); err != nil {
		t.Fatal(err)
	}
	b.WriteTo(&buf)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("a second check changed the body")
	}
}

// SetRequest refuses a history: it is fed message by message.
func TestSessionSetRequestRefusesHistory(t *testing.T) {
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 100}})
	must(t, err)
	if err := s.SetRequest(json.RawMessage(`{"model":"m","messages":[{"role":"user","content":"x"}]}`)); err == nil {
		t.Errorf("a history in the request fields was taken")
	}
	if err := s.SetRequest(json.RawMessage(`{"model":"m","messages":[]}`)); err != nil {
		t.Errorf("an empty history refused: %v", err)
	}
}

// A session shapes units and pins as Body.Bind does: an assistant
// turn with the user turn after it is one unit, the first real user
// message and system messages are pinned.
func TestSessionUnitsAndPins(t *testing.T) {
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 1 << 20}})
	must(t, err)
	if _, _, err := s.Sync([]byte(toolBody)); err != nil {
		t.Fatal(err)
	}
	c := s.Context()
	u1, _ := c.UnitOf("m1")
	u2, _ := c.UnitOf("m2")
	u3, _ := c.UnitOf("m3")
	if u1.ID != u2.ID || u1.ID == u3.ID {
		t.Errorf("units %v %v %v", u1, u2, u3)
	}
	if m, _ := c.Message("m0"); !m.Pinned {
		t.Errorf("the task is not pinned")
	}
	if m, _ := c.Message("m1"); m.Pinned {
		t.Errorf("a call is pinned")
	}
	sys, err := s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleSystem, Content: []byte("later rules")})
	must(t, err)
	if m, _ := c.Message(sys); !m.Pinned {
		t.Errorf("a system message is not pinned")
	}
}

// Results of a tool the provider runs are irreducible unless annotated,
// in a session as in Body.Bind, and a final turn whose server tool
// call waits for its result is never proposed.
func TestSessionServerTools(t *testing.T) {
	body := `{"system":"s","tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[{"role":"user","content":"news?"},
		{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"news"}},
			{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},{"type":"text","text":"` + longText + `"}]},
		{"role":"user","content":"and today?"},
		{"role":"assistant","content":[{"type":"text","text":"` + longText + `"},{"type":"server_tool_use","id":"srvtoolu_2","name":"web_search","input":{"query":"today"}}]}]}`
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.Anthropic, Guard: pruneguard.Guard{Budget: 10},
		Unannotated: wire.UnannotatedRegenerable, Config: pruneguard.Config{TextClass: pruneguard.Reconstructible}})
	must(t, err)
	out, _, err := s.Sync([]byte(body))
	must(t, err)
	if m, _ := s.Context().Message("m1"); m.Class != pruneguard.Irreducible {
		t.Errorf("a web search result is %v", m.Class)
	}
	if !bytes.Contains(out, []byte(`"srvtoolu_2"`)) {
		t.Errorf("the paused turn was pruned: %s", out)
	}
}

// OnReport hears of every request guarded or refused, with the
// conversation's name.
func TestConversationsOnReport(t *testing.T) {
	var names []string
	var errs []error
	cs, err := wire.NewConversations(wire.ConversationsConfig{Session: wire.SessionConfig{Guard: pruneguard.Guard{Budget: 1 << 20}},
		OnReport: func(name string, _ wire.Report, err error) { names = append(names, name); errs = append(errs, err) }})
	must(t, err)
	ctx := context.Background()
	_, _, err = cs.Guard(ctx, wire.OpenAIChat, chatBody(chatTurns(2, 3)))
	must(t, err)
	_, _, err = cs.Guard(wire.WithConversation(ctx, "x"), wire.OpenAIChat, chatBody(chatTurns(1, 3)))
	must(t, err)
	_, _, err = cs.Guard(ctx, wire.OpenAIChat, []byte(`{"messages":[{"role":"tool","tool_call_id":"c","content":"x"}]}`))
	if err == nil || len(names) != 3 || names[0] != "auto-0" || names[1] != "x" || errs[0] != nil || errs[2] == nil {
		t.Errorf("reports %q, errors %v", names, errs)
	}
}

// A Responses input given as a plain string is the user message it
// stands for: the session writes it as a message item, and a body synced
// twice continues the session.
func TestSessionStringInput(t *testing.T) {
	s, err := wire.NewSession(wire.SessionConfig{Dialect: wire.OpenAIResponses, Guard: pruneguard.Guard{Budget: 1 << 20}})
	must(t, err)
	body := []byte(`{"model":"m","input":"hello"}`)
	out, _, err := s.Sync(body)
	must(t, err)
	if !jsonEqual(t, out, []byte(`{"model":"m","input":[{"role":"user","content":"hello"}]}`)) {
		t.Errorf("written as %s", out)
	}
	if v, _ := wire.Validate(out, wire.OpenAIResponses); len(v) > 0 {
		t.Errorf("violations %v", v)
	}
	if _, rep, err := s.Sync(body); err != nil || rep.Reset {
		t.Errorf("a second sync: %+v %v", rep, err)
	}
}
