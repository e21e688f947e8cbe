package wire_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// eventScript is a conversation fed as events and streams, with calls
// abandoned: each step feeds both sessions and returns what the caller
// sees (ids, bodies, reports, errors).
func eventScript(n int) []func(s *wire.Session) string {
	var steps []func(s *wire.Session) string
	out := func(v ...any) string { return fmt.Sprint(v...) }
	req := func(s *wire.Session) string {
		b, rep, err := s.Request()
		return out(string(b), err) + reportString(rep)
	}
	for k := range n {
		call := pruneguard.CallID(fmt.Sprintf("c%d", k))
		var open pruneguard.MessageID
		steps = append(steps,
			func(s *wire.Session) string {
				id, err := s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleUser, Content: []byte(fmt.Sprintf("step %d: look item %d up", k, k))})
				return out(id, err)
			},
			req,
			func(s *wire.Session) string {
				id, err := s.Open(pruneguard.RoleAssistant)
				open = id
				return out(id, err)
			},
			func(s *wire.Session) string { return out(s.WriteText(open, fmt.Sprintf("looking %d", k))) },
			func(s *wire.Session) string { return out(s.WriteCall(open, call, "lookup", `{"q":`)) },
			func(s *wire.Session) string { return out(s.WriteCall(open, call, "", fmt.Sprintf(`"item %d"}`, k))) },
			func(s *wire.Session) string { return out(s.Close(open)) },
			func(s *wire.Session) string {
				id, err := s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{call},
					Content: []byte(strings.Repeat(fmt.Sprintf("item %d has fact f%d. ", k, k), 20))})
				return out(id, err)
			},
		)
		if k%4 == 1 {
			gone := pruneguard.CallID(fmt.Sprintf("g%d", k))
			steps = append(steps,
				func(s *wire.Session) string {
					id, err := s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleAssistant,
						Calls: []pruneguard.Call{{ID: gone, Tool: "lookup", Args: []byte(`{"q":"lost"}`)}}})
					return out(id, err)
				},
				func(s *wire.Session) string { return out(s.Abandon(gone)) },
			)
		}
		steps = append(steps, req)
	}
	return steps
}

func reportString(rep wire.Report) string {
	return fmt.Sprintf("%v %v %v %v %d %d %d", rep.Evicted, rep.Stubbed, rep.Refusals, rep.Summarized, rep.Before, rep.After, len(rep.Result.Spills))
}

// TestSessionSaveRestoreEvents: a session fed events and streams, saved
// and restored at every few steps (in the middle of a stream too), sees
// what a session never restored sees, step by step, in every dialect.
func TestSessionSaveRestoreEvents(t *testing.T) {
	every := 5 // steps between restores
	if testing.Short() || raceEnabled {
		every = 13
	}
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			cfg := func(store spill.Store) wire.SessionConfig {
				return wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: 1500, Summarizer: pruneguard.Digest{}},
					Trigger: 2000, Spiller: &spill.Spiller{Store: store}}
			}
			one, err := wire.NewSession(cfg(&spill.Memory{}))
			must(t, err)
			store := &spill.Memory{}
			twin, err := wire.NewSession(cfg(store))
			must(t, err)
			must(t, one.SetRequest([]byte(`{"model":"m","max_tokens":100}`)))
			must(t, twin.SetRequest([]byte(`{"model":"m","max_tokens":100}`)))
			pruned := 0
			for i, step := range eventScript(24) {
				want, got := step(one), step(twin)
				if got != want {
					t.Fatalf("step %d:\n got %s\nwant %s", i, got, want)
				}
				pruned += strings.Count(want, "seg-")
				if i%every == every-1 {
					twin = saveRestore(t, twin, cfg(store))
				}
			}
			if pruned == 0 {
				t.Fatalf("nothing was spilled")
			}
		})
	}
}
