package einoguard

import (
	"context"
	"errors"

	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
)

// Counting. The budget counts the list the model is sent, with
// Config.Tokens: each message once when it is taken in, and each stub,
// summary and note the session makes. The Context counts what the guard
// knows: the messages' counts, a summary as Tokens counts its message
// (Context.SummaryCounter), a stub as StubTokens, a stubbed result with
// a pointer and each pointer line as PointerTokens. The two differ
// by what the Context cannot see (a stub's envelope, the note's own,
// a custom StubTokens); the guard is run on the difference.

// sampleCall and sampleTool stand for the envelope of a stubbed result:
// a call id as long as OpenAI's and a long tool name.
const (
	sampleCall = "call_0123456789abcdefghijklmn"
	sampleTool = "a_tool_name_of_thirty_two_bytes_"
)

// configureCounts sets the stub's token count, and the pointers', when
// the configuration leaves them zero: what Config.Tokens counts for a
// stubbed result (a sample call id and tool name around the text), and
// for the longest pointer text as a stubbed result or as a line of the
// note, whichever is more.
func (s *Session) configureCounts() {
	cfg := &s.cfg.Context
	if cfg.StubTokens <= 0 {
		cfg.StubTokens = s.resultTokens(s.stub)
	}
	if s.cfg.Guard.Spill != nil && cfg.PointerTokens == 0 {
		text := longestPointerText(s.cfg.Guard.Spill)
		line := s.cfg.Tokens(&schema.Message{Role: schema.System, Content: "\n" + text})
		cfg.PointerTokens = max(s.resultTokens(text), line)
	}
}

// resultTokens counts a tool result whose content is text.
func (s *Session) resultTokens(text string) int {
	name := sampleTool
	for _, t := range s.cfg.Tools {
		if len(t.Name) > len(name) {
			name = t.Name
		}
	}
	return s.cfg.Tokens(&schema.Message{Role: schema.Tool, Content: text, ToolCallID: sampleCall, ToolName: name})
}

// guard runs the guard so that the list as sent comes within the budget:
// on the Context, with the budget, trigger and ceiling less what the list
// as sent holds beyond the Context's count; and again, three times at
// most, when the Context came within its budget and the list as sent did
// not (a stub counted longer than StubTokens). Before and After count
// the list as sent.
func (s *Session) guard(ctx context.Context) (pruneguard.Result, error) {
	g := s.cfg.Guard
	if g.Spill != nil {
		g.Spill = spillAs{s: s, Spiller: g.Spill}
	}
	budget, trigger, minClear, ceiling := g.Budget, g.Trigger, g.MinClear, g.Ceiling
	if ceiling == 0 {
		ceiling = s.cfg.Context.Ceiling
	}
	before := s.sent
	target := min(budget, before-minClear)
	var res pruneguard.Result
	var err error
	for try := 0; ; try++ {
		fixed := s.sent - s.c.Tokens()
		if try == 0 {
			g.Budget = max(budget-fixed, 1)
			if trigger > 0 {
				g.Trigger = max(trigger-fixed, g.Budget)
			}
		} else {
			g.Budget, g.Trigger, g.MinClear = max(target-fixed, 1), 0, 0
		}
		if ceiling > 0 {
			g.Ceiling = max(ceiling-fixed, g.Budget, g.Trigger)
		}
		var r pruneguard.Result
		r, err = g.CheckContext(ctx, s.c)
		s.apply(r.Decisions)
		merge(&res, r, try)
		reached := r.After <= min(g.Budget, r.Before-g.MinClear)
		if err != nil || r.Compaction == "" || s.sent <= target || len(r.Decisions) == 0 || !reached || try == 3 {
			break
		}
	}
	if len(res.Decisions) > 0 {
		res.Outcome = pruneguard.Pruned
	}
	res.Before, res.After = before, s.sent
	var ce *pruneguard.CeilingError
	if errors.As(err, &ce) {
		ce.Tokens = s.sent
		if ceiling > 0 {
			ce.Ceiling = ceiling
		}
	}
	return res, err
}

// merge adds the result of a later run of a check to res.
func merge(res *pruneguard.Result, r pruneguard.Result, try int) {
	if try == 0 {
		*res = r
		return
	}
	res.Decisions = append(res.Decisions, r.Decisions...)
	res.Refused = append(res.Refused, r.Refused...)
	res.Spills = append(res.Spills, r.Spills...)
	res.SpillErrors = append(res.SpillErrors, r.SpillErrors...)
	res.Alerts = append(res.Alerts, r.Alerts...)
	if r.Reason != nil {
		res.Reason = r.Reason
	}
	res.Outcome = r.Outcome
}
