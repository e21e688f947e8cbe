package einoguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
	einoguard "github.com/pruneguard/pruneguard/adapters/eino"
	"github.com/pruneguard/pruneguard/sessions"
	"github.com/pruneguard/pruneguard/spill"
)

// fleetMode is a guard configuration the fleet tests run a conversation
// under, so that stubs, evictions, summaries, pointer texts and the note
// all cross a save.
type fleetMode struct {
	name  string
	guard func(sp *spill.Spiller) pruneguard.Guard
}

var fleetModes = []fleetMode{
	{"stub", func(*spill.Spiller) pruneguard.Guard {
		return pruneguard.Guard{Budget: 2500, Policy: pruneguard.KeepLastToolUses{Keep: 2, Stub: true}}
	}},
	{"summary", func(*spill.Spiller) pruneguard.Guard {
		return pruneguard.Guard{Budget: 1800, Policy: pruneguard.OldestFirst{}, Summarizer: pruneguard.Digest{}}
	}},
	{"spill", func(sp *spill.Spiller) pruneguard.Guard {
		return pruneguard.Guard{Budget: 2200, Policy: pruneguard.OldestFirst{}, Spill: sp}
	}},
	{"spill-stub", func(sp *spill.Spiller) pruneguard.Guard {
		return pruneguard.Guard{Budget: 2500, Policy: pruneguard.KeepLastToolUses{Keep: 1, Stub: true}, Spill: sp}
	}},
}

// fleetConfig is the Config of one replica of a conversation: its own
// Spiller on the spill store the fleet shares, and, when store is set,
// the session store.
func fleetConfig(m fleetMode, spills spill.Store, store sessions.Store) einoguard.Config {
	sp := &spill.Spiller{Store: spills, Namespace: spill.Namespace("acme", "conv-1")}
	tools := []pruneguard.Tool{readTool, {Name: "deploy"}}
	scoped(tools)
	return einoguard.Config{
		Guard:     m.guard(sp),
		Tools:     tools,
		Sessions:  store,
		SessionID: sessions.ID("acme", "conv-1"),
	}
}

// fleetScript returns the lists a runtime hands the guard before each
// model call of a conversation, each the whole history so far: reads,
// deploys, conclusions and new tasks.
func fleetScript(turns int) [][]*schema.Message {
	msgs := []*schema.Message{schema.SystemMessage(systemPrompt), schema.UserMessage("audit and deploy")}
	var lists [][]*schema.Message
	for n := 1; n <= turns; n++ {
		id := fmt.Sprintf("c%d", n)
		switch {
		case n%5 == 0:
			msgs = append(msgs, schema.UserMessage(fmt.Sprintf("task %d: go on", n)))
		case n%3 == 0:
			msgs = append(msgs,
				schema.AssistantMessage("", []schema.ToolCall{{ID: id, Function: schema.FunctionCall{Name: "deploy", Arguments: fmt.Sprintf(`{"service":"s%d"}`, n)}}}),
				schema.ToolMessage(receipt(n), id, schema.WithToolName("deploy")))
		default:
			msgs = append(msgs,
				schema.AssistantMessage("", []schema.ToolCall{{ID: id, Function: schema.FunctionCall{Name: "read_file", Arguments: fmt.Sprintf(`{"path":"f%d.go"}`, n)}}}),
				schema.ToolMessage(strings.Repeat("r", 1600)+fmt.Sprint(n), id, schema.WithToolName("read_file")),
				schema.AssistantMessage(fmt.Sprintf("f%d.go has bug BUG-%d.", n, 100+n), nil))
		}
		lists = append(lists, cloneList(msgs))
	}
	return lists
}

// cloneList copies every message, as a runtime on another replica holds
// its own copies of the history.
func cloneList(ms []*schema.Message) []*schema.Message {
	out := make([]*schema.Message, len(ms))
	for i, m := range ms {
		c := *m
		out[i] = &c
	}
	return out
}

// sentJSON is what a list says to the model, for comparing lists sent
// by different sessions.
func sentJSON(t *testing.T, ms []*schema.Message) string {
	t.Helper()
	b, err := json.Marshal(ms)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameSent fails the test when got, sent by a session, is not want,
// what one session sent, naming the first message that differs.
func sameSent(t *testing.T, what string, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	var g, w []json.RawMessage
	_ = json.Unmarshal([]byte(got), &g)
	_ = json.Unmarshal([]byte(want), &w)
	for i := range max(len(g), len(w)) {
		a, b := "(none)", "(none)"
		if i < len(g) {
			a = string(g[i])
		}
		if i < len(w) {
			b = string(w[i])
		}
		if a != b {
			t.Fatalf("%s: %d messages sent, one session sent %d; message %d is\n%.300s\nnot\n%.300s", what, len(g), len(w), i, a, b)
		}
	}
}

// reference runs the script through one session that never stops, and
// returns what it sent for each list.
func reference(t *testing.T, m fleetMode, script [][]*schema.Message) []string {
	t.Helper()
	s := mustNew(t, fleetConfig(m, &spill.Memory{}, nil))
	want := make([]string, len(script))
	for k, l := range script {
		out, _, err := s.Prune(t.Context(), cloneList(l))
		if err != nil {
			t.Fatalf("reference, list %d: %v", k, err)
		}
		want[k] = sentJSON(t, out)
	}
	return want
}

// A session saved after any pass and restored into a new session sends
// what the one that never stopped sends, for lists of the whole history
// and for its own answer with new messages after it; and what restores
// saves back to the same bytes.
func TestSaveRestoreContinues(t *testing.T) {
	for _, m := range fleetModes {
		t.Run(m.name, func(t *testing.T) {
			script := fleetScript(24)
			want := reference(t, m, script)
			spills := &spill.Memory{}
			s := mustNew(t, fleetConfig(m, spills, nil))
			var last []*schema.Message
			for k, l := range script {
				var buf bytes.Buffer
				if err := s.Save(&buf); err != nil {
					t.Fatal(err)
				}
				s = mustNew(t, fleetConfig(m, spills, nil))
				if err := s.Restore(t.Context(), bytes.NewReader(buf.Bytes())); err != nil {
					t.Fatalf("list %d: restore: %v", k, err)
				}
				var again bytes.Buffer
				if err := s.Save(&again); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(buf.Bytes(), again.Bytes()) {
					t.Fatalf("list %d: the restored session saves other bytes", k)
				}
				in := cloneList(l)
				if k%2 == 1 && last != nil { // its own answer, then what is new
					in = append(cloneList(last), cloneList(l[len(script[k-1]):])...)
				}
				out, _, err := s.Prune(t.Context(), in)
				if err != nil {
					t.Fatalf("list %d: %v", k, err)
				}
				sameSent(t, fmt.Sprintf("list %d, restored", k), sentJSON(t, out), want[k])
				last = out
			}
		})
	}
}

// Two replicas sharing a directory of sessions serve one conversation
// in turns, and both at once, and send exactly what one session sends.
func TestFleetReplicasSendWhatOneSends(t *testing.T) {
	for _, m := range fleetModes {
		t.Run(m.name, func(t *testing.T) {
			script := fleetScript(30)
			want := reference(t, m, script)
			dir := t.TempDir()
			spills := &spill.Memory{}
			counted := &hookStore{Store: sessions.Dir(dir)}
			replicas := [2]*einoguard.Session{
				mustNew(t, fleetConfig(m, spills, counted)),
				mustNew(t, fleetConfig(m, spills, sessions.Dir(dir))),
			}
			for k, l := range script {
				if k%3 != 2 { // in turns
					out, _, err := replicas[k%2].Prune(t.Context(), cloneList(l))
					if err != nil {
						t.Fatalf("list %d: %v", k, err)
					}
					sameSent(t, fmt.Sprintf("list %d, replica %d", k, k%2), sentJSON(t, out), want[k])
					continue
				}
				var wg sync.WaitGroup
				for i, r := range replicas { // both at once, as on a retried request
					wg.Add(1)
					go func() {
						defer wg.Done()
						out, _, err := r.Prune(context.Background(), cloneList(l))
						if err != nil {
							t.Errorf("list %d, replica %d: %v", k, i, err)
							return
						}
						if got := sentJSON(t, out); got != want[k] {
							t.Errorf("list %d, replica %d racing: sent other messages than one session", k, i)
						}
					}()
				}
				wg.Wait()
				if t.Failed() {
					t.FailNow()
				}
			}
			t.Logf("replica 0 redid %d passes", counted.conflicts.Load())
		})
	}
}

// hookStore is a session store that runs beforeSave before each Save,
// fails Loads with loadErr and Saves with saveErr when they are set, and
// counts the Saves that conflict.
type hookStore struct {
	sessions.Store
	beforeSave       func()
	loadErr, saveErr error
	conflicts        atomic.Int64
}

func (h *hookStore) Load(ctx context.Context, id string) ([]byte, sessions.Version, error) {
	if h.loadErr != nil {
		return nil, sessions.Absent, &sessions.IDError{Op: "load", ID: id, Err: h.loadErr}
	}
	return h.Store.Load(ctx, id)
}

func (h *hookStore) Save(ctx context.Context, id string, state []byte, expect sessions.Version) (sessions.Version, error) {
	if h.beforeSave != nil {
		h.beforeSave()
	}
	if h.saveErr != nil {
		return sessions.Absent, &sessions.IDError{Op: "save", ID: id, Err: h.saveErr}
	}
	v, err := h.Store.Save(ctx, id, state, expect)
	if errors.Is(err, sessions.ErrConflict) {
		h.conflicts.Add(1)
	}
	return v, err
}
