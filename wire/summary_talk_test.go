package wire_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/wire"
)

// talkBody is a body of dialect d with a system prompt and n turns of a
// user's text, each with a ticket id, and the model's answer.
func talkBody(d wire.Dialect, n int) string {
	text := func(role, s string) string { return textMessage(d, role, s) }
	var all []string
	for k := 0; k < n; k++ {
		all = append(all, text("user", fmt.Sprintf("Turn %d: ticket INC-%d, %s", k, 4700+k, strings.Repeat("words ", 80))),
			text("assistant", fmt.Sprintf("Noted INC-%d.", 4700+k)))
	}
	all = append(all, text("user", "next"))
	switch d {
	case wire.OpenAIChat:
		return `{"model":"m","messages":[{"role":"system","content":"sys"},` + strings.Join(all, ",") + `]}`
	case wire.OpenAIResponses:
		return `{"model":"m","instructions":"sys","input":[` + strings.Join(all, ",") + `]}`
	case wire.Anthropic:
		return `{"model":"m","max_tokens":10,"system":"sys","messages":[` + strings.Join(all, ",") + `]}`
	case wire.Gemini:
		return `{"systemInstruction":{"parts":[{"text":"sys"}]},"contents":[` + strings.Join(all, ",") + `]}`
	}
	return `{"system":[{"text":"sys"}],"messages":[` + strings.Join(all, ",") + `]}`
}

// TestGuardedSummaryOfTalk: a conversation of text alone (no tool
// calls) compacts in every dialect into a body that breaks no rule the
// input kept, within budget, with every ticket id the user gave still in
// the body.
func TestGuardedSummaryOfTalk(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			body := talkBody(d, 12)
			in := read(t, d, body)
			g, _, budget := compactHalf(t, d, body)
			out, ob := writtenValid(t, d, in, g)
			if n := wire.Tokens(ob, nil); n > budget {
				t.Errorf("%d tokens, budget %d", n, budget)
			}
			vis := visible(t, out.Bytes())
			for k := 0; k < 12; k++ {
				if id := fmt.Sprintf("INC-%d", 4700+k); !strings.Contains(vis, id) {
					t.Errorf("%s is lost", id)
				}
			}
		})
	}
}

// TestSessionCompactsTalk: a session of text alone, compacted again and
// again, sends in every dialect only requests that break no rule, each
// within the trigger, the ticket ids of every turn still in the last;
// between compactions each request keeps the one before as its prefix.
func TestSessionCompactsTalk(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			s, err := wire.NewSession(wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: 1200, Summarizer: pruneguard.Digest{}}, Trigger: 1500})
			must(t, err)
			const n = 60
			summaries, kept := 0, 0
			var last []byte
			var prev *wire.Body
			playTurns(t, s, d, talkBody(d, n), func(out []byte, rep wire.Report) {
				last = out
				b := read(t, d, string(out))
				if prev != nil && len(rep.Result.Decisions) == 0 {
					// Between compactions the prompt keeps its prefix.
					kept++
					if len(b.Messages) < len(prev.Messages) {
						t.Fatalf("the request lost messages with no compaction")
					}
					for i, m := range prev.Messages {
						if !bytes.Equal(m.Raw, b.Messages[i].Raw) {
							t.Fatalf("message %d of the last request changed with no compaction:\n%s\n%s", i, m.Raw, b.Messages[i].Raw)
						}
					}
				}
				prev = b
				if vs := b.Validate(); len(vs) > 0 {
					t.Fatalf("the request breaks %v\n%s", vs, out)
				}
				if rep.After > 1500 {
					t.Errorf("%d tokens, over the trigger", rep.After)
				}
				summaries += len(rep.Summarized)
			})
			if summaries < 3 || kept < n/2 {
				t.Fatalf("%d compactions", summaries)
			}
			vis := visible(t, last)
			for k := 0; k < n; k++ {
				if id := fmt.Sprintf("INC-%d", 4700+k); !strings.Contains(vis, id) {
					t.Errorf("%s is lost", id)
				}
			}
		})
	}
}

// TestGuardedCountsSummaryAsWritten: the Context counts a summary as its
// body writes it (the message around the text, the text escaped), so a
// compaction moves the body's tokens and the Context's alike and a check
// reaches its budget in one pass, with one summary.
func TestGuardedCountsSummaryAsWritten(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			g, err := wire.Bind([]byte(talkBody(d, 12)), d, wire.Options{})
			must(t, err)
			fixed := g.Tokens() - g.Context().Tokens()
			res, _, err := g.Check(pruneguard.Guard{Budget: g.Tokens() / 2, Summarizer: pruneguard.Digest{}})
			must(t, err)
			if len(res.Decisions) != 1 || summaryOf(res) == nil {
				t.Fatalf("want one summary, got %d decisions: %v", len(res.Decisions), res.Reason)
			}
			got := g.Tokens() - g.Context().Tokens()
			// In Bedrock the summary joins the user message before it,
			// which costs a little less than a message of its own.
			if got != fixed && (d != wire.Bedrock || got > fixed) {
				t.Errorf("the body holds %d tokens beyond the Context's after the summary, %d before", got, fixed)
			}
		})
	}
}

// TestSessionCountsSummaryAsWritten: a session, and one restored from
// its saved state, counts a summary as its body writes it, so that a
// check that compacts moves the body's tokens and the Context's alike.
func TestSessionCountsSummaryAsWritten(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			s, err := wire.NewSession(wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: 1 << 20}})
			must(t, err)
			_, rep, err := s.Sync([]byte(talkBody(d, 12)))
			must(t, err)
			fixed := rep.After - s.Context().Tokens()
			var buf bytes.Buffer
			must(t, s.Save(&buf))
			r, err := wire.RestoreSession(&buf, wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: rep.After / 2, Summarizer: pruneguard.Digest{}}})
			must(t, err)
			rep, err = r.Check()
			must(t, err)
			if len(rep.Result.Decisions) != 1 || summaryOf(rep.Result) == nil {
				t.Fatalf("want one summary, got %d decisions: %v", len(rep.Result.Decisions), rep.Result.Reason)
			}
			got := rep.After - r.Context().Tokens()
			if got != fixed && (d != wire.Bedrock || got > fixed) {
				t.Errorf("the body holds %d tokens beyond the Context's after the summary, %d before", got, fixed)
			}
		})
	}
}

// fixedCounter counts every text as n tokens.
type fixedCounter int

func (n fixedCounter) Count([]byte) int { return int(n) }

// TestSummaryCounterGivenStands: a SummaryCounter the configuration gives
// is the one the Context counts a summary with, for a bound body and a
// session alike; wire sets its own only when none is given.
func TestSummaryCounterGivenStands(t *testing.T) {
	d := wire.OpenAIChat
	cfg := pruneguard.Config{SummaryCounter: fixedCounter(3)}
	g, err := wire.Bind([]byte(talkBody(d, 12)), d, wire.Options{Config: cfg})
	must(t, err)
	res, _, err := g.Check(pruneguard.Guard{Budget: g.Tokens() / 2, Summarizer: pruneguard.Digest{}})
	must(t, err)
	s, err := wire.NewSession(wire.SessionConfig{Dialect: d, Config: cfg, Guard: pruneguard.Guard{Budget: g.Tokens() / 2, Summarizer: pruneguard.Digest{}}})
	must(t, err)
	_, rep, err := s.Sync([]byte(talkBody(d, 12)))
	must(t, err)
	for _, r := range []pruneguard.Result{res, rep.Result} {
		if sd := summaryOf(r); sd == nil || sd.Summary.Tokens != 3 {
			t.Fatalf("want a summary counted 3 tokens, got %+v: %v", sd, r.Reason)
		}
	}
}
