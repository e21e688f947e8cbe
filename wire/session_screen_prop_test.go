package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/pruneguard/pruneguard"
	"pgregory.net/rapid"
)

// A session screens and counts its history slot by slot; these
// properties check it against the body written whole: for random
// histories of every dialect, fed as provider JSON and as events, and
// random decisions, applied or not, the slots' verdict is the one
// NewViolations(Validate(now), Validate(after)) gives, and the running
// token count is the count of the body written.

// feedSession feeds a random history of dialect d: the messages of a
// random body as provider JSON, with event messages in between.
func feedSession(t *rapid.T, d Dialect) *Session {
	body := genBody(t, d)
	b, err := Read([]byte(body), d)
	if err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	s, err := NewSession(SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: 1 << 30},
		Unannotated: UnannotatedRegenerable,
		Config:      pruneguard.Config{Boundary: pruneguard.BoundaryRelaxed, TextClass: pruneguard.Reconstructible}})
	if err != nil {
		t.Fatal(err)
	}
	top := map[string]json.RawMessage{}
	if err := json.Unmarshal([]byte(body), &top); err != nil {
		t.Fatal(err)
	}
	delete(top, b.key)
	fields, _ := json.Marshal(top)
	if err := s.SetRequest(fields); err != nil {
		t.Skip("request fields refused:", err)
	}
	var open []pruneguard.CallID
	k := 0
	event := func() {
		switch rapid.IntRange(0, 3).Draw(t, "event") {
		case 0:
			s.AppendMessage(pruneguard.Message{Role: pruneguard.RoleUser, Content: []byte(rapid.SampledFrom([]string{"ask", " ", "more"}).Draw(t, "utext"))})
		case 1:
			m := pruneguard.Message{Role: pruneguard.RoleAssistant, Content: []byte(rapid.SampledFrom([]string{"", "thinking aloud"}).Draw(t, "atext"))}
			for range rapid.IntRange(0, 2).Draw(t, "ecalls") {
				k++
				id := pruneguard.CallID(fmt.Sprintf("e%d", k))
				m.Calls = append(m.Calls, pruneguard.Call{ID: id, Tool: "f", Args: json.RawMessage(`{"x":1}`)})
			}
			if _, err := s.AppendMessage(m); err == nil {
				for _, c := range m.Calls {
					open = append(open, c.ID)
				}
			}
		case 2, 3:
			if len(open) == 0 {
				return
			}
			n := rapid.IntRange(1, len(open)).Draw(t, "answers")
			m := pruneguard.Message{Role: pruneguard.RoleTool, Content: []byte("a result of some length to stub"), Answers: open[:n]}
			if _, err := s.AppendMessage(m); err == nil {
				open = open[n:]
			}
		}
	}
	for i := range b.facts {
		if rapid.IntRange(0, 3).Draw(t, "interleave") == 0 {
			event()
		}
		if _, err := s.Append(b.facts[i].raw); err != nil {
			t.Skip("message refused:", err)
		}
	}
	for range rapid.IntRange(0, 4).Draw(t, "tail") {
		event()
	}
	return s
}

// renderedTokens counts the body the session writes, as Tokens does.
func renderedTokens(t *rapid.T, s *Session) int {
	b, err := Read(s.render(), s.cfg.Dialect)
	if err != nil {
		t.Fatalf("the session wrote a body it cannot read: %v", err)
	}
	return Tokens(b, s.count)
}

func TestSessionSlotsEqualWhole(t *testing.T) {
	for _, d := range Dialects {
		t.Run(string(d), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				s := feedSession(t, d)
				if !s.slotUp() {
					t.Skip("a history the slots do not follow")
				}
				for step := range rapid.IntRange(1, 5).Draw(t, "steps") {
					if got, want := string(joinArray(s.historyPieces(nil))), string(joinArray(s.historyWhole(nil))); got != want {
						t.Fatalf("step %d: the slots write\n%s\nthe messages fed write\n%s", step, got, want)
					}
					if got, want := s.bodyTokens(), renderedTokens(t, s); got != want {
						t.Fatalf("step %d: %d tokens counted, the body written has %d\n%s", step, got, want, s.render())
					}
					var p pruneguard.Plan
					for _, e := range s.entries {
						if e.gone {
							continue
						}
						switch rapid.IntRange(0, 4).Draw(t, fmt.Sprintf("edit%d", step)) {
						case 0:
							p.Evict = append(p.Evict, e.id)
						case 1:
							if m, ok := s.ctx.Message(e.id); ok && len(m.Answers) > 0 {
								p.Stub = append(p.Stub, e.id)
							}
						}
					}
					p.Split = pruneguard.SplitShrink
					dec, err := s.ctx.Prune(p)
					for try := 0; err != nil && try < 4; try++ {
						// Take out what the gates refuse, as the guard does.
						hidden := map[pruneguard.UnitID]bool{}
						var pe *pruneguard.PruneError
						var de *pruneguard.DeferredError
						switch {
						case errors.As(err, &pe):
							for _, v := range pe.Violations {
								for _, u := range v.Units {
									hidden[u] = true
								}
							}
						case errors.As(err, &de):
							for _, u := range de.Units {
								hidden[u] = true
							}
						default:
							try = 4
						}
						drop := func(id pruneguard.MessageID) bool {
							u, ok := s.ctx.UnitOf(id)
							return !ok || hidden[u.ID]
						}
						p.Evict = slices.DeleteFunc(p.Evict, drop)
						p.Stub = slices.DeleteFunc(p.Stub, drop)
						dec, err = s.ctx.Prune(p)
					}
					if err != nil || dec.Empty() {
						continue
					}
					refs, ok := s.screenSlots(dec)
					if !ok {
						continue
					}
					stubRefused := false
					for _, r := range refs {
						stubRefused = stubRefused || r.Code == CodeStubNotSmaller || r.Code == CodeStubUnsupported
					}
					if !stubRefused {
						before, _ := Validate(s.render(), d)
						after, _ := Validate(s.topFor(dec).withHistory(s.key, s.history(dec)), d)
						nv := NewViolations(before, after)
						if (len(refs) == 0) != (len(nv) == 0) {
							t.Fatalf("step %d: the slots refuse %v, the body written breaks %v\nevict %v stub %v\n%s", step, refs, nv, dec.Evict, dec.Stub, s.render())
						}
					}
					if len(refs) == 0 && rapid.Bool().Draw(t, fmt.Sprintf("apply%d", step)) {
						if err := s.ctx.Apply(dec); err != nil {
							t.Fatal(err)
						}
						s.record(dec)
						if !s.slotUp() {
							continue
						}
						// The slots' globals are those of the history written.
						want := s.sl.rules.glob
						fresh := s.newSlots()
						keep := s.sl
						s.sl = fresh
						s.slotUp()
						if !s.sl.irregular && !keep.broken {
							got := fresh.rules.glob
							if got.thinking != want.thinking || got.signed != want.signed || got.toolBlocks != want.toolBlocks || got.itemRefs != want.itemRefs {
								t.Fatalf("step %d: globals kept %+v, of the history now %+v", step, want, got)
							}
						}
					}
				}
			})
		})
	}
}
