// Package einobench compares pruneguard with eino's reduction middleware
// on the workload that middleware exists for: clear every tool result but
// the latest few, before each model call of a long tool-calling session.
//
// A session is a system prompt, a user task, then rounds of an assistant
// message with one read_file call and its result. Each turn appends a
// round and runs the reduction, as a runtime does before a model call;
// in the steady state every turn clears exactly one result, the one that
// fell out of the kept window. The three reducers are:
//
//   - eino: adk's reduction middleware (NewToolResultMiddleware, its
//     BeforeChatModel, which is the clear-tool-result reduction), driven
//     as adk's ChatModelAgent drives it: the state's message list with the
//     round appended;
//   - pruneguard: a pruneguard.Context fed the round's two messages as
//     events, then Guard.Check with KeepLastToolUses{Stub: true};
//   - pruneguard-adapter: an einoguard.Session given the whole eino list
//     (as a react MessageModifier is), returning the list to send.
//
// All three count tokens as eino's default counter does (bytes of content
// and call arguments over four), clear to eino's placeholder, keep the
// same latest Keep results, and clear the same messages (see the tests).
// eino triggers on the tokens of uncleared tool results (threshold
// Keep results' worth), pruneguard on a total budget: the tokens the
// session holds, at its starting length, with Keep results uncleared.
// Both are exceeded by every new round.
package einobench

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/adk/filesystem"
	"github.com/cloudwego/eino/adk/middlewares/reduction"
	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
)

// The workload's shape.
const (
	// Keep is how many of the latest tool results stay uncleared.
	Keep = 3
	// ResultBytes is the size of each tool result (500 tokens).
	ResultBytes = 2000
	// Placeholder is eino's default text for a cleared result.
	Placeholder = "[Old tool result content cleared]"
	// Tool is the one tool called; it is read-only and closed-world.
	Tool = "read_file"
)

// content is shared by every result: a string is never copied.
var content = strings.Repeat("x", ResultBytes)

// Count is eino's default token counter (reduction's
// defaultTokenCounter): content and call arguments, four bytes a token.
func Count(m *schema.Message) int {
	n := len(m.Content)
	for _, tc := range m.ToolCalls {
		n += len(tc.Function.Arguments)
	}
	return (n + 3) / 4
}

// Round returns round i: an assistant message calling read_file and the
// result. Every round has the same token counts.
func Round(i int) (call, result *schema.Message) {
	id := fmt.Sprintf("call_%08d", i)
	call = schema.AssistantMessage("", []schema.ToolCall{{ID: id, Type: "function",
		Function: schema.FunctionCall{Name: Tool, Arguments: fmt.Sprintf(`{"path":"src/f%08d.go"}`, i)}}})
	result = schema.ToolMessage(content, id, schema.WithToolName(Tool))
	return call, result
}

// Session returns a session of n messages (n even, at least 4): the
// system prompt, the task, and (n-2)/2 rounds, none cleared.
func Session(n int) []*schema.Message {
	msgs := make([]*schema.Message, 0, n)
	msgs = append(msgs, schema.SystemMessage("You are a coding agent."), schema.UserMessage("Refactor the parser."))
	for i := 0; len(msgs) < n; i++ {
		a, r := Round(i)
		msgs = append(msgs, a, r)
	}
	return msgs
}

// roundTokens are the tokens of one round's call and result.
func roundTokens() (call, result int) {
	a, r := Round(0)
	return Count(a), Count(r)
}

// Budget is pruneguard's budget for a session of msgs: its tokens with
// all but the latest Keep results cleared.
func Budget(msgs []*schema.Message) int {
	stub := Count(&schema.Message{Content: Placeholder})
	results := 0
	for _, m := range msgs {
		if m.Role == schema.Tool {
			results++
		}
	}
	total, seen := 0, 0
	for _, m := range msgs {
		if m.Role == schema.Tool {
			seen++
			if seen <= results-Keep {
				total += stub
				continue
			}
		}
		total += Count(m)
	}
	return total
}

// A Reducer runs one implementation of the workload.
type Reducer interface {
	// Start takes a session and brings it to the steady state: all but
	// the latest Keep results cleared.
	Start(msgs []*schema.Message) error
	// Turn appends a round and reduces, as before a model call.
	Turn(call, result *schema.Message) error
	// Sent returns the list the model would be sent now.
	Sent() ([]*schema.Message, error)
}

// Eino is eino's reduction middleware.
type Eino struct {
	mw    adk.AgentMiddleware
	state []*schema.Message
}

type nopBackend struct{}

func (nopBackend) Write(context.Context, *filesystem.WriteRequest) error { return nil }

// NewEino configures eino's middleware for the workload: a threshold of
// Keep results' tokens, and a recent window that protects exactly the
// latest Keep rounds (eino keeps the message that overflows the window
// too, hence one token less than Keep rounds).
func NewEino() (*Eino, error) {
	a, r := roundTokens()
	mw, err := reduction.NewToolResultMiddleware(context.Background(), &reduction.ToolResultConfig{
		ClearingTokenThreshold:     Keep * r,
		KeepRecentTokens:           Keep*(a+r) - 1,
		ClearToolResultPlaceholder: Placeholder,
		Backend:                    nopBackend{},
	})
	if err != nil {
		return nil, err
	}
	return &Eino{mw: mw}, nil
}

// Start implements Reducer.
func (e *Eino) Start(msgs []*schema.Message) error {
	e.state = msgs
	return e.before()
}

// Turn implements Reducer, as adk's ChatModelAgent runs its
// BeforeChatModel middlewares: on a state holding the list with the new
// messages appended.
func (e *Eino) Turn(call, result *schema.Message) error {
	e.state = append(e.state, call, result)
	return e.before()
}

func (e *Eino) before() error {
	s := &adk.ChatModelAgentState{Messages: e.state}
	if err := e.mw.BeforeChatModel(context.Background(), s); err != nil {
		return err
	}
	e.state = s.Messages
	return nil
}

// Sent implements Reducer.
func (e *Eino) Sent() ([]*schema.Message, error) { return e.state, nil }

// config is the pruneguard configuration of the workload.
func config() (pruneguard.Config, pruneguard.Tool) {
	return pruneguard.Config{StubText: Placeholder, StubTokens: Count(&schema.Message{Content: Placeholder})},
		pruneguard.Tool{Name: Tool, Annotations: pruneguard.Annotations{
			ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}}
}

// Core is pruneguard's core: a Context fed events and Guard.Check.
type Core struct {
	c    *pruneguard.Context
	g    pruneguard.Guard
	seq  int
	msgs map[pruneguard.MessageID]*schema.Message // for Sent only
}

// Start implements Reducer.
func (p *Core) Start(msgs []*schema.Message) error {
	cfg, tool := config()
	p.c = pruneguard.NewContext(cfg)
	if err := p.c.RegisterTool(tool); err != nil {
		return err
	}
	p.g = pruneguard.Guard{Budget: Budget(msgs), Policy: pruneguard.KeepLastToolUses{Keep: Keep, Stub: true}}
	p.seq = 0
	p.msgs = make(map[pruneguard.MessageID]*schema.Message, len(msgs))
	for _, m := range msgs {
		if err := p.add(m); err != nil {
			return err
		}
	}
	_, err := p.g.Check(p.c)
	return err
}

func (p *Core) add(m *schema.Message) error {
	p.seq++
	id := pruneguard.MessageID("m" + strconv.Itoa(p.seq))
	if p.msgs != nil {
		p.msgs[id] = m
	}
	return p.c.Append(einoguard.Event(m, id, Count(m)))
}

// Turn implements Reducer: the round's two events, then the check.
func (p *Core) Turn(call, result *schema.Message) error {
	if err := p.add(call); err != nil {
		return err
	}
	if err := p.add(result); err != nil {
		return err
	}
	// The budget follows what eino keeps: every result but the latest
	// Keep cleared. The round adds its call and, once cleared, a
	// placeholder.
	p.g.Budget += Count(call) + stubTokens()
	_, err := p.g.Check(p.c)
	return err
}

// stubTokens is the placeholder's count.
func stubTokens() int { return Count(&schema.Message{Content: Placeholder}) }

// Sent implements Reducer. It renders from the messages p was given,
// which it indexes unless NoIndex was called.
func (p *Core) Sent() ([]*schema.Message, error) {
	var out []*schema.Message
	for _, e := range p.c.Snapshot() {
		m, ok := p.msgs[e.ID]
		if !ok {
			return nil, fmt.Errorf("message %s not indexed", e.ID)
		}
		if e.Stubbed {
			m = einoguard.Stub(m, Placeholder)
		}
		out = append(out, m)
	}
	return out, nil
}

// NoIndex stops p from indexing its messages for Sent, as a runtime that
// renders from its own store would not; benchmarks call it after Start.
func (p *Core) NoIndex() { p.msgs = nil }

// Adapter is einoguard's Session given the whole list each turn.
type Adapter struct {
	s      *einoguard.Session
	budget int
	hist   []*schema.Message
	sent   []*schema.Message
}

// Start implements Reducer.
func (a *Adapter) Start(msgs []*schema.Message) error {
	cfg, tool := config()
	s, err := einoguard.New(einoguard.Config{
		Guard:   pruneguard.Guard{Budget: Budget(msgs), Policy: pruneguard.KeepLastToolUses{Keep: Keep, Stub: true}},
		Context: cfg,
		Tools:   []pruneguard.Tool{tool},
		Tokens:  Count,
	})
	if err != nil {
		return err
	}
	a.s, a.hist, a.budget = s, msgs, Budget(msgs)
	a.sent, _, err = s.Prune(context.Background(), a.hist)
	return err
}

// Turn implements Reducer.
func (a *Adapter) Turn(call, result *schema.Message) error {
	a.hist = append(a.hist, call, result)
	// The budget follows what eino keeps, as the core's does.
	a.budget += Count(call) + stubTokens()
	if err := a.s.SetBudget(a.budget); err != nil {
		return err
	}
	var err error
	a.sent, _, err = a.s.Prune(context.Background(), a.hist)
	return err
}

// Sent implements Reducer.
func (a *Adapter) Sent() ([]*schema.Message, error) { return a.sent, nil }
