// Package newcomer runs the scenario a runtime author meets on day one,
// as a test: a long Anthropic agent on a wire.Session with a directory
// spill store, a logger, the recall tool and a restart halfway (Save,
// then RestoreSession with a new Spiller), under a small budget, with
// a scripted model that must find, at the last turn, a ticket the user
// gave at turn 3. It is shared by the tests of the module and of the
// tokenizer, which runs it with a real tokenizer's counter.
package newcomer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// Ticket is what the user gives at turn 3 and asks for at the last turn.
const Ticket = "TCK-4417"

// Config is one run of the scenario.
type Config struct {
	Turns    int                // of the conversation; the last asks for the ticket
	Budget   int                // of every request, whole body, as Counter counts it
	Counter  pruneguard.Counter // nil means the approximate counter
	Dir      string             // of the spill store
	MinClear int
}

// Outcome is what a run saw.
type Outcome struct {
	Requests int    // requests made
	Max      int    // the largest request, in tokens
	Found    string // the ticket the model found, "" if none
	ByRecall bool   // the model found it through the recall tool
	Spills   int    // segments written
	Logs     string // everything the logger wrote
}

// agent is the runtime: a session, its Spiller and the requests made.
type agent struct {
	t   testing.TB
	s   *wire.Session
	sp  *spill.Spiller
	cfg Config
	out *Outcome
}

// Run plays the scenario and fails t on any request over the budget, any
// error, and any warning-level log record.
func Run(t testing.TB, cfg Config) Outcome {
	t.Helper()
	var logs bytes.Buffer
	out := Outcome{}
	st := &putCounter{Store: spill.Dir(cfg.Dir), puts: map[string]int{}}
	scfg := wire.SessionConfig{
		Dialect: wire.Anthropic,
		Guard:   pruneguard.Guard{Budget: cfg.Budget, MinClear: cfg.MinClear},
		Config:  pruneguard.Config{Counter: cfg.Counter},
		Spiller: newSpiller(st),
		Logger:  slog.New(slog.NewJSONHandler(&logs, nil)),
	}
	s, err := wire.NewSession(scfg)
	if err != nil {
		t.Fatal(err)
	}
	tools := []json.RawMessage{wire.RecallTool(wire.Anthropic),
		json.RawMessage(`{"name":"read_file","description":"Read a file of the workspace.","input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}`)}
	req, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024,
		"system": "You are a support agent. Keep track of the tickets the user gives you.", "tools": tools})
	if err := s.SetRequest(req); err != nil {
		t.Fatal(err)
	}
	a := &agent{t: t, s: s, sp: scfg.Spiller.(*spill.Spiller), cfg: cfg, out: &out}
	for i := 1; i < cfg.Turns; i++ {
		a.turn(i)
		if i == cfg.Turns/2 {
			// The restart halfway: the session saved, the process gone,
			// a new Spiller on the same directory, the session restored.
			var saved bytes.Buffer
			if err := a.s.Save(&saved); err != nil {
				t.Fatal(err)
			}
			scfg.Spiller = newSpiller(st)
			if a.s, err = wire.RestoreSession(&saved, scfg); err != nil {
				t.Fatal(err)
			}
			a.sp = scfg.Spiller.(*spill.Spiller)
		}
	}
	a.last()
	out.Logs = logs.String()
	for k, n := range st.puts {
		if n > 1 {
			t.Errorf("segment %s written %d times", k, n)
		}
	}
	for _, line := range strings.Split(out.Logs, "\n") {
		if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
			t.Errorf("a warning in the log: %s", line)
		}
	}
	return out
}

// user appends a user message of text.
func (a *agent) append(v any) {
	a.t.Helper()
	raw, _ := json.Marshal(v)
	if _, err := a.s.Append(raw); err != nil {
		a.t.Fatal(err)
	}
}

// request is one model call: the body, checked against the budget.
func (a *agent) request() []byte {
	a.t.Helper()
	body, rep, err := a.s.RequestContext(context.Background())
	if err != nil {
		a.t.Fatalf("request %d: %v", a.out.Requests, err)
	}
	a.out.Requests++
	a.out.Max = max(a.out.Max, rep.After)
	a.out.Spills += len(rep.Result.Spills)
	if rep.After > a.cfg.Budget {
		a.t.Fatalf("request %d: %d tokens over the budget of %d: %v (held %v)", a.out.Requests, rep.After, a.cfg.Budget, rep.Result.Reason, rep.Result.Held)
	}
	return body
}

// turn is one turn of work: the user asks, the model reads a file, then
// answers.
func (a *agent) turn(i int) {
	text := fmt.Sprintf("Turn %d: look at the notes of case %d and summarise them.", i, i)
	if i == 3 {
		text = fmt.Sprintf("Turn 3: the billing bug is tracked as ticket %s; remember it.", Ticket)
	}
	a.append(map[string]any{"role": "user", "content": text})
	a.request()
	id := fmt.Sprintf("toolu_%04d", i)
	a.append(map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "tool_use", "id": id, "name": "read_file", "input": map[string]any{"path": fmt.Sprintf("notes/%d.txt", i)}}}})
	a.append(map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": id, "content": notes(i)}}})
	a.request()
	a.append(map[string]any{"role": "assistant", "content": fmt.Sprintf("Case %d: the notes say the customer waited %d days.", i, i%9+1)})
}

// notes is the content of a case's file: about 150 words.
func notes(i int) string {
	var b strings.Builder
	for k := range 30 {
		fmt.Fprintf(&b, "case %d line %d: status pending. ", i, k)
	}
	return b.String()
}

// last is the last turn: the user asks for the ticket; the model answers
// from the prompt when the user's words at turn 3 are in it, or else
// calls recall with a query (a pointer line may name the ticket among
// its segment's facts, but not what it is for) and answers from what
// recall gives back.
func (a *agent) last() {
	a.append(map[string]any{"role": "user", "content": "Which ticket did I give you for the billing bug?"})
	body := a.request()
	if t := ticketIn(body); t != "" {
		a.out.Found = t
		a.append(map[string]any{"role": "assistant", "content": "It is " + t + "."})
		return
	}
	args := json.RawMessage(`{"query":"billing bug ticket"}`)
	a.append(map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "tool_use", "id": "toolu_recall", "name": spill.RecallToolName, "input": args}}})
	answer, err := a.sp.HandleRecall(context.Background(), args)
	if err != nil {
		a.t.Fatalf("recall: %v", err)
	}
	a.append(map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": "toolu_recall", "content": answer}}})
	if t := ticketIn(a.request()); t != "" {
		a.out.Found, a.out.ByRecall = t, true
	}
}

// sentenceRE is what the user said at turn 3, in a body's JSON (recall
// answers quote the message's JSON once more).
var sentenceRE = regexp.MustCompile(`billing bug is tracked as ticket (TCK-[0-9]+)`)

// ticketIn returns the ticket the user's words at turn 3 name in body,
// or "".
func ticketIn(body []byte) string {
	if m := sentenceRE.FindSubmatch(body); m != nil {
		return string(m[1])
	}
	return ""
}

// newSpiller is the Spiller of one process of the scenario.
func newSpiller(st spill.Store) *spill.Spiller {
	return &spill.Spiller{Store: st, Namespace: "newcomer", MaxRecallBytes: 6 << 10}
}

// putCounter counts the writes that stored content, by key.
type putCounter struct {
	spill.Store
	puts map[string]int
}

func (p *putCounter) Put(ctx context.Context, key string, b []byte) error {
	err := p.Store.Put(ctx, key, b)
	if err == nil {
		p.puts[key]++
	}
	return err
}

func (p *putCounter) Remove(ctx context.Context, key string) error {
	return p.Store.(spill.Remover).Remove(ctx, key)
}

func (p *putCounter) List(ctx context.Context, prefix string) ([]string, error) {
	return p.Store.(spill.Lister).List(ctx, prefix)
}
