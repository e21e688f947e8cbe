package einoguard_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
)

var readTool = pruneguard.Tool{Name: "read_file", Annotations: closedWorld}

// conv builds conversations: a system prompt and a task, then rounds of
// one read_file call and its result of size bytes.
type conv struct {
	msgs []*schema.Message
	n    int
}

func newConv(task string) *conv {
	return &conv{msgs: []*schema.Message{schema.SystemMessage(systemPrompt), schema.UserMessage(task)}}
}

func (c *conv) round(tool string, size int) *conv {
	c.n++
	id := fmt.Sprintf("c%d", c.n)
	c.msgs = append(c.msgs,
		schema.AssistantMessage("", []schema.ToolCall{{ID: id, Function: schema.FunctionCall{Name: tool, Arguments: fmt.Sprintf(`{"n":%d}`, c.n)}}}),
		schema.ToolMessage(strings.Repeat("r", size), id, schema.WithToolName(tool)))
	return c
}

func (c *conv) say(role schema.RoleType, text string) *conv {
	c.msgs = append(c.msgs, &schema.Message{Role: role, Content: text})
	return c
}

func mustNew(t testing.TB, cfg einoguard.Config) *einoguard.Session {
	t.Helper()
	s, err := einoguard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func prune(t *testing.T, s *einoguard.Session, msgs []*schema.Message) ([]*schema.Message, einoguard.Report) {
	t.Helper()
	out, r, err := s.Prune(context.Background(), msgs)
	if err != nil {
		t.Fatalf("prune: %v", err)
	}
	if err := checkConversation(out); err != nil {
		t.Fatalf("pruned list breaks the rules: %v", err)
	}
	return out, r
}

func TestNewRefusesNoBudget(t *testing.T) {
	for _, b := range []int{0, -1} {
		s, err := einoguard.New(einoguard.Config{Guard: pruneguard.Guard{Budget: b}})
		if !errors.Is(err, einoguard.ErrBudget) || s != nil {
			t.Errorf("budget %d: New = %v, %v; want ErrBudget", b, s, err)
		}
	}
	_, err := einoguard.New(einoguard.Config{Guard: pruneguard.Guard{Budget: 10}, Tools: []pruneguard.Tool{{Name: ""}}})
	if !errors.Is(err, pruneguard.ErrInvalidInput) {
		t.Errorf("a nameless tool: New = %v, want an input error", err)
	}
	// What the guard would refuse at every pass is refused at once.
	var ce *pruneguard.ConfigError
	if _, err := einoguard.New(einoguard.Config{Guard: pruneguard.Guard{Budget: 100, Trigger: 50}}); !errors.As(err, &ce) {
		t.Errorf("a trigger below the budget: New = %v, want a configuration error", err)
	}
	if _, err := einoguard.New(einoguard.Config{Guard: pruneguard.Guard{Budget: 100}, Context: pruneguard.Config{StubText: " "}}); !errors.As(err, &ce) {
		t.Errorf("a blank stub text: New = %v, want a configuration error", err)
	}
}

// A MessageModifier sees the full history each time: the session takes
// in only what was appended, and the caller's messages stay as they were.
func TestModifierTakesInOnlyNewMessages(t *testing.T) {
	s := mustNew(t, einoguard.Config{
		Guard: pruneguard.Guard{Budget: 1000, Policy: pruneguard.KeepLastToolUses{Keep: 1, Stub: true}},
		Tools: []pruneguard.Tool{readTool},
	})
	c := newConv("task").round("read_file", 2000)
	out, r := prune(t, s, c.msgs)
	if r.Taken != 4 || r.Rebuilt || len(r.Stubbed) != 0 || len(out) != 4 {
		t.Fatalf("first pass: %+v, %d sent", r, len(out))
	}
	out[0] = nil // the returned slice is the caller's
	c.round("read_file", 2000)
	out, r = prune(t, s, c.msgs)
	if r.Taken != 2 || r.Rebuilt {
		t.Fatalf("second pass took %d (rebuilt %v), want the 2 new messages", r.Taken, r.Rebuilt)
	}
	if len(r.Stubbed) != 1 || r.Stubbed[0] != c.msgs[3] {
		t.Fatalf("stubbed %v, want the first result as the caller gave it", r.Stubbed)
	}
	if got := out[3]; got == c.msgs[3] || got.Content != pruneguard.DefaultStubText || got.ToolCallID != "c1" || got.ToolName != "read_file" {
		t.Errorf("sent %+v for the stubbed result", got)
	}
	if len(c.msgs[3].Content) != 2000 {
		t.Error("the caller's message was modified")
	}
	if s.Tokens() != r.Result.After || r.Result.After > 1000 {
		t.Errorf("tokens %d -> %d over budget 1000", r.Result.Before, r.Result.After)
	}
	// The same list again: nothing new, the same answer.
	again, r := prune(t, s, c.msgs)
	if r.Taken != 0 || r.Rebuilt || !slices.Equal(again, out) {
		t.Errorf("repeated list: took %d, rebuilt %v", r.Taken, r.Rebuilt)
	}
}

// A MessageRewriter (or adk middleware) gets back the session's own
// answer with new messages appended.
func TestRewriterRecognisesItsOwnAnswer(t *testing.T) {
	s := mustNew(t, einoguard.Config{
		Guard: pruneguard.Guard{Budget: 600, Policy: pruneguard.OldestFirst{}},
		Tools: []pruneguard.Tool{readTool},
	})
	c := newConv("task").round("read_file", 2000).round("read_file", 2000)
	state, r := prune(t, s, c.msgs)
	if len(r.Evicted) == 0 || len(state) >= len(c.msgs) {
		t.Fatalf("nothing evicted: %+v", r)
	}
	for i := 0; i < 5; i++ {
		c.round("read_file", 2000)
		state = append(state, c.msgs[len(c.msgs)-2:]...)
		state, r = prune(t, s, state)
		if r.Rebuilt || r.Taken != 2 {
			t.Fatalf("round %d: took %d, rebuilt %v", i, r.Taken, r.Rebuilt)
		}
		if state[0].Content != systemPrompt || state[1].Content != "task" {
			t.Fatalf("round %d: lost the system prompt or the task: %v", i, contents(state))
		}
	}
}

func TestChangedHistoryRebuilds(t *testing.T) {
	s := mustNew(t, einoguard.Config{Guard: pruneguard.Guard{Budget: 100000}, Tools: []pruneguard.Tool{readTool}})
	c := newConv("task").round("read_file", 10).round("read_file", 10)
	prune(t, s, c.msgs)
	before := s.Tokens()

	// Shorter: a new conversation.
	d := newConv("other task")
	out, r := prune(t, s, d.msgs)
	if !r.Rebuilt || r.Taken != 2 || len(out) != 2 || s.Tokens() >= before {
		t.Errorf("shorter list: rebuilt %v, took %d, sent %d, tokens %d (were %d)", r.Rebuilt, r.Taken, len(out), s.Tokens(), before)
	}
	// Same length, last message replaced.
	e := slices.Clone(d.msgs)
	e[1] = schema.UserMessage("other task, reworded")
	if _, r = prune(t, s, e); !r.Rebuilt {
		t.Error("a replaced last message did not rebuild")
	}
	// A new system prompt pointer with the same text (adk builds it afresh
	// each run) is the same conversation.
	f := append(slices.Clone(e), schema.UserMessage("more"))
	f[0] = schema.SystemMessage(systemPrompt)
	if _, r = prune(t, s, f); r.Rebuilt || r.Taken != 1 {
		t.Errorf("equal system prompt: rebuilt %v, took %d", r.Rebuilt, r.Taken)
	}
	// Another system prompt is another conversation.
	g := append(slices.Clone(f), schema.UserMessage("again"))
	g[0] = schema.SystemMessage("another prompt")
	if _, r = prune(t, s, g); !r.Rebuilt {
		t.Error("a different system prompt did not rebuild")
	}
	// Empty, then content again.
	if out, r = prune(t, s, nil); !r.Rebuilt || len(out) != 0 || s.Tokens() != 0 {
		t.Errorf("empty list: rebuilt %v, %d sent, %d tokens", r.Rebuilt, len(out), s.Tokens())
	}
	if _, r = prune(t, s, c.msgs); r.Rebuilt || r.Taken != len(c.msgs) {
		t.Errorf("after empty: rebuilt %v, took %d", r.Rebuilt, r.Taken)
	}
}

func TestMalformedConversation(t *testing.T) {
	var got []einoguard.Report
	s := mustNew(t, einoguard.Config{
		Guard:    pruneguard.Guard{Budget: 100},
		OnReport: func(_ context.Context, r einoguard.Report) { got = append(got, r) },
	})
	bad := []*schema.Message{schema.SystemMessage(systemPrompt), schema.UserMessage("task"), nil,
		schema.ToolMessage(strings.Repeat("z", 4000), "nobody-called-me")}
	out, _, err := s.Prune(context.Background(), bad)
	if !errors.Is(err, pruneguard.ErrInvalidInput) {
		t.Fatalf("a nil message: err %v, want an input error", err)
	}
	if !slices.Equal(out, bad) {
		t.Error("a malformed list was not returned as given")
	}
	if len(got) != 1 || !errors.Is(got[0].Err, pruneguard.ErrInvalidInput) {
		t.Errorf("OnReport got %+v", got)
	}
	if mod := s.Modifier()(context.Background(), bad); !slices.Equal(mod, bad) {
		t.Error("the modifier changed a malformed list")
	}
	st := &adk.ChatModelAgentState{Messages: bad}
	if err := s.Middleware().BeforeChatModel(context.Background(), st); !errors.Is(err, pruneguard.ErrInvalidInput) || !slices.Equal(st.Messages, bad) {
		t.Errorf("middleware: %v", err)
	}
	// A good list afterwards starts over and works.
	good := newConv("task").round("read_file", 10).msgs
	if _, r := prune(t, s, good); !r.Rebuilt || r.Taken != len(good) {
		t.Errorf("after an error: rebuilt %v, took %d", r.Rebuilt, r.Taken)
	}
}

// The latest user message is the task: oldest-first would take it first,
// the session keeps it until the next user message arrives.
func TestLatestUserMessageStays(t *testing.T) {
	// Text may go: the runtime accepts losing an old task.
	s := mustNew(t, einoguard.Config{
		Guard:   pruneguard.Guard{Budget: 700, Policy: pruneguard.OldestFirst{}},
		Context: pruneguard.Config{TextClass: pruneguard.Reconstructible},
		Tools:   []pruneguard.Tool{readTool},
	})
	task := strings.Repeat("please ", 200) // 350 tokens
	c := newConv(task).round("read_file", 2000).round("read_file", 400)
	out, r := prune(t, s, c.msgs)
	if !slices.Contains(out, c.msgs[1]) {
		t.Fatalf("the task was pruned: %v", contents(out))
	}
	if len(r.Evicted) == 0 {
		t.Fatal("nothing was pruned")
	}
	refused := false
	for _, rf := range r.Refused {
		refused = refused || (rf.Violation.Code == pruneguard.CodeReferenced && slices.Equal(rf.Messages, c.msgs[1:2]))
	}
	if !refused || len(r.Refused) != len(r.Result.Refused) {
		t.Errorf("no refusal names the protected task: %v", r.Refused)
	}
	// A new question: the old task may go now, the new one stays.
	c.say(schema.Assistant, "done").say(schema.User, strings.Repeat("next ", 100)).round("read_file", 2000)
	out, _ = prune(t, s, c.msgs)
	if slices.Contains(out, c.msgs[1]) {
		t.Errorf("the old task stayed although over budget: %v", contents(out))
	}
	if !slices.Contains(out, c.msgs[len(c.msgs)-3]) {
		t.Errorf("the new task was pruned: %v", contents(out))
	}
	if out[0].Content != systemPrompt {
		t.Error("the system prompt was pruned")
	}
}

func TestUnannotatedToolsStay(t *testing.T) {
	// deploy is registered unannotated, only with the scope it changes, so
	// that the reads of files stay reconstructible after it.
	tools := []pruneguard.Tool{readTool, {Name: "deploy"}}
	scoped(tools)
	s := mustNew(t, einoguard.Config{
		Guard: pruneguard.Guard{Budget: 100, Policy: pruneguard.KeepLastToolUses{Keep: 1, Stub: true}},
		Tools: tools,
	})
	c := newConv("task").round("deploy", 2000).round("read_file", 2000).round("deploy", 2000).round("read_file", 10)
	_, r := prune(t, s, c.msgs)
	if len(r.Stubbed) != 1 || r.Stubbed[0] != c.msgs[5] {
		t.Errorf("stubbed %v, want only the first read_file result", contents(r.Stubbed))
	}
	var kept []*schema.Message
	for _, rf := range r.Refused {
		if rf.Violation.Code == pruneguard.CodeIrreducible {
			kept = append(kept, rf.Messages...)
		}
	}
	if !slices.Contains(kept, c.msgs[3]) || !slices.Contains(kept, c.msgs[7]) {
		t.Errorf("refusals name %v, want both deploy results", contents(kept))
	}
}

func TestFactsKeepAMessage(t *testing.T) {
	s := mustNew(t, einoguard.Config{
		Guard: pruneguard.Guard{Budget: 100, Policy: pruneguard.KeepLastToolUses{Keep: 1, Stub: true}},
		Tools: []pruneguard.Tool{readTool},
		Facts: func(m *schema.Message) pruneguard.Facts {
			if m.ToolCallID == "c1" {
				return pruneguard.NegativeResult
			}
			return 0
		},
	})
	c := newConv("task").round("read_file", 2000).round("read_file", 2000).round("read_file", 2000)
	_, r := prune(t, s, c.msgs)
	if len(r.Stubbed) != 1 || r.Stubbed[0].ToolCallID != "c2" {
		t.Errorf("stubbed %v, want c2 only: c1 is a negative result", r.Stubbed)
	}
}

// A custom stub text and counter: the budget counts the stubs as the
// counter counts the text sent, whatever StubTokens says, so the guard
// goes on until the list as sent is within it.
func TestCustomStubAndTokens(t *testing.T) {
	calls := 0
	count := func(m *schema.Message) int {
		calls++
		return len(m.Content)
	}
	s := mustNew(t, einoguard.Config{
		Guard:   pruneguard.Guard{Budget: 75, Policy: pruneguard.LargestResultsFirst{Stub: true}},
		Context: pruneguard.Config{StubText: "[cleared]", StubTokens: 2},
		Tools:   []pruneguard.Tool{readTool},
		Tokens:  count,
	})
	// The model has read both results and answered.
	c := newConv("task").round("read_file", 30).round("read_file", 40).say(schema.Assistant, "ok")
	out, r := prune(t, s, c.msgs)
	if calls != len(c.msgs)+len(r.Stubbed) {
		t.Errorf("Tokens called %d times for %d messages and %d stubs", calls, len(c.msgs), len(r.Stubbed))
	}
	// Stubbing the larger result leaves 76 as sent (the Context counts
	// 69): the smaller one goes too.
	if len(r.Stubbed) != 2 || r.Stubbed[0] != c.msgs[3] || r.Stubbed[1] != c.msgs[5] || out[3].Content != "[cleared]" || out[5].Content != "[cleared]" {
		t.Errorf("stubbed %v, sent %q", contents(r.Stubbed), contents(out))
	}
	n := 0
	for _, m := range out {
		n += len(m.Content)
	}
	if want := len(systemPrompt) + 4 + 0 + 9 + 0 + 9 + 2; r.Result.After != want || n != want || s.Tokens() != want {
		t.Errorf("after %d tokens, sent %d, session %d, want %d", r.Result.After, n, s.Tokens(), want)
	}
}

// Calls without ids (some models give none) pair with results in order.
func TestCallsWithoutIDs(t *testing.T) {
	s := mustNew(t, einoguard.Config{
		Guard: pruneguard.Guard{Budget: 300, Policy: pruneguard.OldestFirst{}},
		Tools: []pruneguard.Tool{readTool},
	})
	anon := func(n int) []*schema.Message {
		return []*schema.Message{
			schema.AssistantMessage("", []schema.ToolCall{{Function: schema.FunctionCall{Name: "read_file"}}, {Function: schema.FunctionCall{Name: "read_file"}}}),
			schema.ToolMessage(strings.Repeat("a", n), "", schema.WithToolName("read_file")),
			schema.ToolMessage(strings.Repeat("b", n), "", schema.WithToolName("read_file")),
		}
	}
	msgs := append(newConv("task").msgs, anon(1000)...)
	msgs = append(msgs, anon(100)...)
	out, r, err := s.Prune(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	// The first batch goes whole: its call and both results.
	if len(r.Evicted) != 3 || r.Evicted[0] != msgs[2] || r.Evicted[2] != msgs[4] {
		t.Errorf("evicted %v, want the first batch whole", contents(r.Evicted))
	}
	if len(out) != 5 || out[2] != msgs[5] {
		t.Errorf("sent %v", contents(out))
	}
	// A result with no call to answer is kept, answering nothing.
	extra := schema.ToolMessage("x", "")
	if out, _, err := s.Prune(context.Background(), append(msgs, extra)); err != nil || !slices.Contains(out, extra) {
		t.Errorf("a result without a call: %v, sent %q", err, contents(out))
	}
}

// A policy that withdraws a schema behind a tombstone: the note follows
// the leading system messages, and leaves when the tool's calls are gone.
func TestTombstoneNote(t *testing.T) {
	drop := true
	policy := pruneguard.PolicyFunc(func(entries []pruneguard.Entry, need int) pruneguard.Plan {
		if drop {
			return pruneguard.Plan{DropSchemas: []string{"read_file"}}
		}
		var p pruneguard.Plan // then evict the read
		for _, e := range entries {
			if slices.Contains(e.Tools, "read_file") {
				p.Evict = append(p.Evict, e.ID)
			}
		}
		return p
	})
	s := mustNew(t, einoguard.Config{
		Guard: pruneguard.Guard{Budget: 500, Policy: policy, Rounds: 1},
		Tools: []pruneguard.Tool{readTool},
	})
	infos := []*schema.ToolInfo{{Name: "read_file"}, {Name: "grep"}}
	c := newConv("task").round("read_file", 2100)
	c.msgs = append([]*schema.Message{schema.SystemMessage("rules")}, c.msgs...)
	out, r := prune(t, s, c.msgs)
	if len(r.Result.Decisions) != 1 || len(r.Result.Decisions[0].Tombstones) != 1 {
		t.Fatalf("no tombstone: %+v", r.Result)
	}
	if len(out) != len(c.msgs)+1 || out[2].Role != schema.System || out[2].Content != r.Result.Decisions[0].Tombstones[0].Text {
		t.Fatalf("sent %v", contents(out))
	}
	if got := s.ResidentTools(infos); len(got) != 1 || got[0].Name != "grep" {
		t.Errorf("resident tools %v", got)
	}
	if st, _ := s.Tool("read_file"); !st.Tombstoned {
		t.Error("read_file is not tombstoned")
	}
	// Evicting the read retires the tombstone.
	drop = false
	c.say(schema.Assistant, "read it").say(schema.User, "next")
	out, r = prune(t, s, c.msgs)
	for _, m := range out {
		if m.Role == schema.System && m.Content != "rules" && m.Content != systemPrompt {
			t.Errorf("the note stayed: %v (retired %v)", contents(out), r.Result.Decisions)
		}
	}
	if !slices.Equal(r.Evicted, c.msgs[3:5]) {
		t.Errorf("evicted %v, want the read", contents(r.Evicted))
	}
}

func TestCeiling(t *testing.T) {
	s := mustNew(t, einoguard.Config{Guard: pruneguard.Guard{Budget: 100, Ceiling: 200}})
	c := newConv("task").round("deploy", 2000) // irreducible: nothing may go
	out, _, err := s.Prune(context.Background(), c.msgs)
	var ce *pruneguard.CeilingError
	if !errors.As(err, &ce) || !errors.Is(err, pruneguard.ErrCeiling) {
		t.Fatalf("err %v, want a ceiling error", err)
	}
	if !slices.Equal(out, c.msgs) {
		t.Error("the furthest safe prune of an unprunable list is the list")
	}
	st := &adk.ChatModelAgentState{Messages: c.msgs}
	if err := s.Middleware().BeforeChatModel(context.Background(), st); !errors.Is(err, pruneguard.ErrCeiling) {
		t.Errorf("middleware: %v", err)
	}
}

func TestWithSession(t *testing.T) {
	a := mustNew(t, einoguard.Config{Guard: pruneguard.Guard{Budget: 1000}})
	b := mustNew(t, einoguard.Config{Guard: pruneguard.Guard{Budget: 1000}})
	if _, ok := einoguard.FromContext(context.Background()); ok {
		t.Error("a bare context carries a session")
	}
	ctx := einoguard.WithSession(context.Background(), b)
	if got, ok := einoguard.FromContext(ctx); !ok || got != b {
		t.Error("FromContext lost the session")
	}
	msgs := newConv("task").msgs
	a.Modifier()(ctx, msgs)
	if a.Tokens() != 0 || b.Tokens() == 0 {
		t.Errorf("tokens a %d, b %d: the context's session should have taken the list", a.Tokens(), b.Tokens())
	}
	a.Modifier()(context.Background(), msgs)
	if a.Tokens() == 0 {
		t.Error("without a session in the context the hook's own session is used")
	}
}

// The session's own stubs, passed back in a list it must rebuild from,
// count as stubs: they are not cleared again.
func TestOwnStubsPassedBack(t *testing.T) {
	s := mustNew(t, einoguard.Config{
		Guard: pruneguard.Guard{Budget: 700, Policy: pruneguard.KeepLastToolUses{Keep: 1, Stub: true}},
		Tools: []pruneguard.Tool{readTool},
	})
	c := newConv("task").round("read_file", 2000).round("read_file", 2000).round("read_file", 2000)
	out, r := prune(t, s, c.msgs)
	if len(r.Stubbed) != 2 {
		t.Fatalf("stubbed %d, want 2", len(r.Stubbed))
	}
	tokens := s.Tokens()
	back := slices.Clone(out)
	back[0] = schema.SystemMessage("a new prompt of the same length.") // forces a rebuild
	again, r := prune(t, s, back)
	if !r.Rebuilt || len(r.Stubbed) != 0 || r.Result.Outcome != pruneguard.UnderBudget {
		t.Errorf("rebuilt %v, stubbed %d again, outcome %s", r.Rebuilt, len(r.Stubbed), r.Result.Outcome)
	}
	if s.Tokens() != tokens+einoguard.ApproxTokens(back[0])-einoguard.ApproxTokens(out[0]) {
		t.Errorf("tokens %d after the rebuild, %d before", s.Tokens(), tokens)
	}
	if len(again) != len(back) || again[3] != back[3] {
		t.Error("a stub passed back was replaced")
	}
}

// SetBudget takes effect at the next pass; a budget that is not positive
// is refused and changes nothing.
func TestSetBudget(t *testing.T) {
	ctx := context.Background()
	s, err := einoguard.New(einoguard.Config{Guard: pruneguard.Guard{Budget: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []*schema.Message{schema.SystemMessage("sys"), schema.UserMessage(strings.Repeat("a long question ", 200))}
	for i := 0; i < 4; i++ {
		msgs = append(msgs, schema.AssistantMessage(strings.Repeat("a long answer ", 200), nil), schema.UserMessage("and then?"))
	}
	out, _, err := s.Prune(ctx, msgs)
	if err != nil || len(out) != len(msgs) {
		t.Fatalf("under a large budget: %d of %d messages, %v", len(out), len(msgs), err)
	}
	if err := s.SetBudget(0); !errors.Is(err, einoguard.ErrBudget) {
		t.Fatalf("SetBudget(0): %v", err)
	}
	if err := s.SetBudget(-5); !errors.Is(err, einoguard.ErrBudget) {
		t.Fatalf("SetBudget(-5): %v", err)
	}
	out, _, err = s.Prune(ctx, msgs)
	if err != nil || len(out) != len(msgs) {
		t.Fatalf("after refused budgets: %d of %d messages, %v", len(out), len(msgs), err)
	}
	if err := s.SetBudget(1); err != nil {
		t.Fatal(err)
	}
	_, rep, _ := s.Prune(ctx, msgs)
	if rep.Result.Before <= 1 || rep.Result.Outcome == pruneguard.UnderBudget {
		t.Fatalf("budget 1 not in force: %+v", rep.Result)
	}
}

// A budget the guard would refuse (above its ceiling or its trigger) is
// refused by SetBudget, not met as a configuration error at every pass.
func TestSetBudgetKeepsTheGuardValid(t *testing.T) {
	s := mustNew(t, einoguard.Config{Guard: pruneguard.Guard{Budget: 100, Trigger: 200, Ceiling: 500}})
	var ce *pruneguard.ConfigError
	for _, b := range []int{300, 600} {
		if err := s.SetBudget(b); !errors.As(err, &ce) || !errors.Is(err, einoguard.ErrBudget) {
			t.Errorf("SetBudget(%d): %v, want a configuration error", b, err)
		}
	}
	msgs := newConv("task").round("read_file", 100).msgs
	if _, _, err := s.Prune(context.Background(), msgs); err != nil {
		t.Errorf("after refused budgets: %v", err)
	}
	if err := s.SetBudget(150); err != nil {
		t.Errorf("SetBudget(150): %v", err)
	}
}
