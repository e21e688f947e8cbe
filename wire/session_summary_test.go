package wire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// splitBody returns the request fields of a body (its history empty)
// and its messages.
func splitBody(t *testing.T, d wire.Dialect, body string) (json.RawMessage, []json.RawMessage) {
	t.Helper()
	var top map[string]json.RawMessage
	must(t, json.Unmarshal([]byte(body), &top))
	key := map[wire.Dialect]string{wire.OpenAIResponses: "input", wire.Gemini: "contents"}[d]
	if key == "" {
		key = "messages"
	}
	var msgs []json.RawMessage
	must(t, json.Unmarshal(top[key], &msgs))
	top[key] = json.RawMessage(`[]`)
	fields, err := json.Marshal(top)
	must(t, err)
	return fields, msgs
}

// modelTurn reports a message the model writes: before it, a runtime
// asks for the request.
func modelTurn(raw json.RawMessage) bool {
	s := string(raw)
	return strings.Contains(s, `"role":"assistant"`) || strings.Contains(s, `"role":"model"`) || strings.Contains(s, `"type":"function_call"`)
}

// playTurns plays the messages of body into s as a runtime does: each
// message appended, and a request before each turn of the model's. It
// calls check with each request's body and report.
func playTurns(t *testing.T, s *wire.Session, d wire.Dialect, body string, check func(body []byte, rep wire.Report)) {
	t.Helper()
	fields, msgs := splitBody(t, d, body)
	must(t, s.SetRequest(fields))
	for _, m := range msgs {
		if modelTurn(m) {
			out, rep, err := s.Request()
			must(t, err)
			check(out, rep)
		}
		if _, err := s.Append(m); err != nil {
			t.Fatal(err)
		}
	}
	out, rep, err := s.Request()
	must(t, err)
	check(out, rep)
}

// TestSessionCompacts: a session with a Summarizer compacts on its
// trigger, turn after turn, in every dialect: each request breaks no
// provider rule, is within the budget, and holds every fact of the
// history (the tool is irreducible and nothing is spilled, so the
// summaries carry them); each compaction is reported and logged with the
// Agent Client Protocol's compaction fields.
func TestSessionCompacts(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			var logs bytes.Buffer
			const budget = 2500
			s, err := wire.NewSession(wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: budget, Summarizer: pruneguard.Digest{}},
				Trigger: 3000, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			must(t, err)
			const n = 60
			body := factBody(d, n)
			summaries, requests := 0, 0
			var last []byte
			playTurns(t, s, d, body, func(out []byte, rep wire.Report) {
				requests++
				last = out
				b := read(t, d, string(out))
				if vs := b.Validate(); len(dropPendingRules(vs)) > 0 {
					t.Fatalf("request %d breaks %v\n%s", requests, vs, out)
				}
				if rep.After > 3000 || wire.Tokens(b, nil) != rep.After {
					t.Errorf("request %d: %d tokens, the body %d", requests, rep.After, wire.Tokens(b, nil))
				}
				for _, sm := range rep.Summarized {
					summaries++
					if len(sm.Replaced) == 0 || sm.ID == "" || sm.Compaction != rep.Result.Compaction || sm.Index != sm.Indexes[0] {
						t.Errorf("summary report %+v", sm)
					}
				}
			})
			if summaries == 0 {
				t.Fatalf("no compaction in %d requests", requests)
			}
			vis := visible(t, last)
			for k := 1; k <= n; k++ {
				for _, f := range unitFacts(k) {
					if !strings.Contains(vis, f) {
						t.Errorf("fact %q of unit %d is lost", f, k)
					}
				}
			}
			if got := strings.Count(logs.String(), `"msg":"`+wire.LogSummary+`"`); got != summaries {
				t.Errorf("%d summary records, %d summaries", got, summaries)
			}
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, wire.LogSummary) && (!regexp.MustCompile(`"compaction":"pruneguard-\d+"`).MatchString(line) || !strings.Contains(line, `"status":"completed"`)) {
					t.Errorf("a summary record without the compaction fields: %s", line)
				}
			}
		})
	}
}

// dropPendingRules drops the violations of calls still waiting at the
// end, which a live history has before its results come.
func dropPendingRules(vs []wire.Violation) []wire.Violation {
	var out []wire.Violation
	for _, v := range vs {
		if !strings.HasSuffix(v.Rule, "/pending-calls") {
			out = append(out, v)
		}
	}
	return out
}

// visible returns a body with its strings decoded after it, for finding
// facts in it.
func visible(t *testing.T, body []byte) string {
	t.Helper()
	var v any
	must(t, json.Unmarshal(body, &v))
	var b strings.Builder
	b.Write(body)
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString("\x00" + x)
		case []any:
			for _, y := range x {
				walk(y)
			}
		case map[string]any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(v)
	return b.String()
}

// keyPattern finds the spill keys a text shows.
var keyPattern = regexp.MustCompile(`seg-[0-9a-f_]+`)

// reachable returns what the model can read from body by recalling the
// keys it shows, and the keys those answers show, page after page, as
// a model following the pointers would.
func reachable(t *testing.T, sp *spill.Spiller, body []byte) string {
	t.Helper()
	all := visible(t, body)
	seen := map[string]bool{}
	queue := keyPattern.FindAllString(all, -1)
	for len(queue) > 0 {
		key := queue[0]
		queue = queue[1:]
		if seen[key] {
			continue
		}
		seen[key] = true
		args, _ := json.Marshal(map[string]string{"key": key})
		for args != nil {
			text, err := sp.HandleRecall(context.Background(), args)
			if err != nil {
				break
			}
			var a struct {
				Next json.RawMessage `json:"next"`
			}
			must(t, json.Unmarshal([]byte(text), &a))
			args = a.Next
			if len(args) == 0 || string(args) == "null" {
				args = nil
			}
			vis := visible(t, []byte(text))
			all += "\x00" + vis
			queue = append(queue, keyPattern.FindAllString(vis, -1)...)
		}
	}
	return all
}

// TestSessionCompactsWithSpill: a session of a few hundred turns with
// spilling and compaction compacts again and again, each summary
// replacing the one before with what followed it; every request is
// within the budget and breaks no rule, pointer and summary text stay
// bounded, and at the end every fact is in the prompt or reachable by
// following the keys the prompt shows.
func TestSessionCompactsWithSpill(t *testing.T) {
	for _, d := range []wire.Dialect{wire.OpenAIChat, wire.Anthropic, wire.Bedrock} {
		t.Run(string(d), func(t *testing.T) {
			sp := &spill.Spiller{Store: &spill.Memory{}}
			const budget = 3000
			s, err := wire.NewSession(wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: budget, Summarizer: pruneguard.Digest{}},
				Trigger: 3500, Spiller: sp})
			must(t, err)
			const n = 150
			summaries, largest := 0, 0
			var last []byte
			playTurns(t, s, d, factBody(d, n), func(out []byte, rep wire.Report) {
				last = out
				b := read(t, d, string(out))
				if vs := dropPendingRules(b.Validate()); len(vs) > 0 {
					t.Fatalf("the request breaks %v\n%s", vs, out)
				}
				if rep.After > 3500 {
					t.Errorf("%d tokens, over the trigger", rep.After)
				}
				summaries += len(rep.Summarized)
				for _, m := range b.Messages {
					for _, tx := range m.Texts {
						if strings.HasPrefix(tx, "[Summary of") {
							largest = max(largest, len(tx))
						}
					}
				}
			})
			if summaries < 3 {
				t.Fatalf("%d compactions", summaries)
			}
			if largest > 4*budget/2 {
				t.Errorf("a summary of %d bytes: not bounded by the budget", largest)
			}
			prompt := visible(t, last)
			all := reachable(t, sp, last)
			inPrompt, total := 0, 0
			for k := 1; k <= n; k++ {
				for _, f := range unitFacts(k) {
					total++
					if strings.Contains(prompt, f) {
						inPrompt++
					}
					if !strings.Contains(all, f) {
						t.Errorf("fact %q of unit %d is neither in the prompt nor reachable", f, k)
					}
				}
			}
			t.Logf("%d compactions, largest summary %d bytes, %d of %d facts in the prompt", summaries, largest, inPrompt, total)
		})
	}
}
