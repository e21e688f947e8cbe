package einoguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
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

// A replica that loses the race redoes its pass on the state the winner
// saved: it sends what one session sends, and the messages the winner
// took in are not taken in again.
func TestFleetLoserRedoes(t *testing.T) {
	m := fleetModes[0]
	script := fleetScript(6)
	want := reference(t, m, script)
	shared := &sessions.Memory{}
	winner := mustNew(t, fleetConfig(m, &spill.Memory{}, shared))
	hooked := &hookStore{Store: shared}
	loser := mustNew(t, fleetConfig(m, &spill.Memory{}, hooked))
	for k := range script[:4] {
		if _, _, err := winner.Prune(t.Context(), cloneList(script[k])); err != nil {
			t.Fatal(err)
		}
	}
	k := 4
	hooked.beforeSave = func() {
		hooked.beforeSave = nil
		if _, _, err := winner.Prune(context.Background(), cloneList(script[k])); err != nil {
			t.Error(err)
		}
	}
	out, r, err := loser.Prune(t.Context(), cloneList(script[k]))
	if err != nil {
		t.Fatal(err)
	}
	if hooked.conflicts.Load() != 1 {
		t.Fatalf("%d conflicts, want the one the winner caused", hooked.conflicts.Load())
	}
	sameSent(t, "the loser's redone pass", sentJSON(t, out), want[k])
	if r.Taken != 0 {
		t.Errorf("the redone pass took in %d messages the winner had taken in", r.Taken)
	}
	out, r, err = winner.Prune(t.Context(), cloneList(script[k+1]))
	if err != nil {
		t.Fatal(err)
	}
	sameSent(t, "the next pass", sentJSON(t, out), want[k+1])
	if n := len(script[k+1]) - len(script[k]); r.Taken != n {
		t.Errorf("the next pass took in %d messages, want the %d new ones", r.Taken, n)
	}
}

// A replica that loses every race gives up after its retries with a
// typed error, and sends nothing.
func TestFleetRetriesBounded(t *testing.T) {
	shared := &sessions.Memory{}
	other := mustNew(t, fleetConfig(fleetModes[0], &spill.Memory{}, shared))
	hooked := &hookStore{Store: shared}
	cfg := fleetConfig(fleetModes[0], &spill.Memory{}, hooked)
	cfg.Retries = 3
	s := mustNew(t, cfg)
	script := fleetScript(8)
	hooked.beforeSave = func() { // another replica saves first, every time
		if _, _, err := other.Prune(context.Background(), cloneList(script[len(script)-1])); err != nil {
			t.Error(err)
		}
	}
	out, _, err := s.Prune(t.Context(), cloneList(script[0]))
	var se *einoguard.StoreError
	if !errors.As(err, &se) || !errors.Is(err, einoguard.ErrStore) || !errors.Is(err, sessions.ErrConflict) {
		t.Fatalf("err = %v, want a *StoreError matching ErrStore and sessions.ErrConflict", err)
	}
	if se.Op != "save" || se.Attempts != 4 || se.ID != cfg.SessionID {
		t.Errorf("StoreError %+v, want op save after 4 attempts on %q", se, cfg.SessionID)
	}
	if out != nil {
		t.Errorf("sent %d messages after the store refused the pass", len(out))
	}
}

// A store that is down fails the pass closed: a typed error naming the
// step, no list; once it is back, the conversation goes on.
func TestFleetStoreDown(t *testing.T) {
	down := errors.New("connection refused")
	for _, step := range []string{"load", "save"} {
		t.Run(step, func(t *testing.T) {
			hooked := &hookStore{Store: &sessions.Memory{}}
			s := mustNew(t, fleetConfig(fleetModes[0], &spill.Memory{}, hooked))
			script := fleetScript(4)
			if _, _, err := s.Prune(t.Context(), cloneList(script[0])); err != nil {
				t.Fatal(err)
			}
			if step == "load" {
				hooked.loadErr = down
			} else {
				hooked.saveErr = down
			}
			out, r, err := s.Prune(t.Context(), cloneList(script[1]))
			var se *einoguard.StoreError
			if !errors.As(err, &se) || se.Op != step || !errors.Is(err, down) || !errors.Is(err, einoguard.ErrStore) {
				t.Fatalf("err = %v, want a *StoreError of %s matching the store's error", err, step)
			}
			if out != nil || r.Err != err {
				t.Errorf("sent %d messages, report error %v", len(out), r.Err)
			}
			hooked.loadErr, hooked.saveErr = nil, nil
			want := reference(t, fleetModes[0], script)
			out, _, err = s.Prune(t.Context(), cloneList(script[1]))
			if err != nil {
				t.Fatal(err)
			}
			sameSent(t, "after the store came back", sentJSON(t, out), want[1])
		})
	}
}

// New refuses a session store without a valid id.
func TestFleetNeedsAnID(t *testing.T) {
	cfg := fleetConfig(fleetModes[0], &spill.Memory{}, &sessions.Memory{})
	for _, id := range []string{"", "Acme/conv 1"} {
		cfg.SessionID = id
		if _, err := einoguard.New(cfg); !errors.Is(err, einoguard.ErrSessionID) {
			t.Errorf("New with SessionID %q: %v, want ErrSessionID", id, err)
		}
	}
}

// Saved state that was truncated or altered in any byte is refused with
// a typed error, and the session restoring it is left as it was; state
// in the store that does not restore fails the pass closed.
func TestRestoreRefusesDamage(t *testing.T) {
	m := fleetModes[1]
	s := mustNew(t, fleetConfig(m, &spill.Memory{}, nil))
	script := fleetScript(12)
	for _, l := range script[:10] {
		if _, _, err := s.Prune(t.Context(), cloneList(l)); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := s.Save(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	fresh := mustNew(t, fleetConfig(m, &spill.Memory{}, nil))
	refused := func(what string, b []byte) {
		t.Helper()
		err := fresh.Restore(t.Context(), bytes.NewReader(b))
		var se *einoguard.StateError
		if !errors.Is(err, einoguard.ErrBadState) || !errors.As(err, &se) {
			t.Fatalf("%s: Restore = %v, want a *StateError matching ErrBadState", what, err)
		}
	}
	for n := 0; n < len(good); n += 1 + n/64 {
		refused(fmt.Sprintf("truncated to %d bytes", n), good[:n])
	}
	for i := 0; i < len(good); i += 1 + i/256 {
		b := bytes.Clone(good)
		b[i] ^= 0x20
		refused(fmt.Sprintf("byte %d changed", i), b)
	}
	if fresh.Tokens() != 0 {
		t.Errorf("a refused Restore changed the session: %d tokens", fresh.Tokens())
	}
	if err := fresh.Restore(t.Context(), bytes.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	if fresh.Tokens() != s.Tokens() {
		t.Errorf("restored session counts %d tokens, the saved one %d", fresh.Tokens(), s.Tokens())
	}

	// In a store: the pass fails closed.
	store := &sessions.Memory{}
	id := sessions.ID("acme", "conv-1")
	if _, err := store.Save(t.Context(), id, good[:len(good)/2], sessions.Absent); err != nil {
		t.Fatal(err)
	}
	r := mustNew(t, fleetConfig(m, &spill.Memory{}, store))
	out, _, err := r.Prune(t.Context(), cloneList(script[10]))
	var se *einoguard.StoreError
	if !errors.As(err, &se) || se.Op != "restore" || !errors.Is(err, einoguard.ErrBadState) || out != nil {
		t.Fatalf("pass on damaged stored state: %d messages, %v; want none and a *StoreError of restore matching ErrBadState", len(out), err)
	}
}

// State that holds together by its digest but not with itself (a view
// naming a message never taken in) is refused too.
func TestRestoreRefusesInconsistentState(t *testing.T) {
	st := savedFields(t, fleetModes[0], 4)
	resealed, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := mustNew(t, fleetConfig(fleetModes[0], &spill.Memory{}, nil)).Restore(t.Context(), bytes.NewReader(einoguard.SealForTest(resealed))); err != nil {
		t.Fatalf("the state resealed by hand: %v", err)
	}
	for what, edit := range map[string]func(map[string]json.RawMessage){
		"view past the history": func(st map[string]json.RawMessage) { st["view"] = json.RawMessage(`[{"seq":999}]`) },
		"view out of order":     func(st map[string]json.RawMessage) { st["view"] = json.RawMessage(`[{"seq":2},{"seq":1}]`) },
		"null message":          func(st map[string]json.RawMessage) { st["history"] = json.RawMessage(`[null]`) },
		"summary without text":  func(st map[string]json.RawMessage) { st["view"] = json.RawMessage(`[{"seq":1,"summary":"s1"}]`) },
		"unknown field":         func(st map[string]json.RawMessage) { st["extra"] = json.RawMessage(`1`) },
		"another format":        func(st map[string]json.RawMessage) { st["format"] = json.RawMessage(`"pruneguard.wire"`) },
	} {
		edited := maps.Clone(st)
		edit(edited)
		b, err := json.Marshal(edited)
		if err != nil {
			t.Fatal(err)
		}
		err = mustNew(t, fleetConfig(fleetModes[0], &spill.Memory{}, nil)).Restore(t.Context(), bytes.NewReader(einoguard.SealForTest(b)))
		if !errors.Is(err, einoguard.ErrBadState) {
			t.Errorf("%s: Restore = %v, want ErrBadState", what, err)
		}
	}
	trailing := append(bytes.Clone(resealed), " {}"...)
	err = mustNew(t, fleetConfig(fleetModes[0], &spill.Memory{}, nil)).Restore(t.Context(), bytes.NewReader(einoguard.SealForTest(trailing)))
	if !errors.Is(err, einoguard.ErrBadState) {
		t.Errorf("data after the state: Restore = %v, want ErrBadState", err)
	}
}

// A summary named twice in the view is refused: a session holds each
// summary once.
func TestRestoreRefusesASummaryTwice(t *testing.T) {
	m := fleetModes[1]
	st := savedFields(t, m, 12)
	var view []map[string]json.RawMessage
	if err := json.Unmarshal(st["view"], &view); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(view, func(sl map[string]json.RawMessage) bool { return sl["summary"] != nil })
	if i < 0 || i+1 >= len(view) {
		t.Fatalf("no summary followed by a message in the view of %d slots", len(view))
	}
	view[i+1]["summary"], view[i+1]["sent"] = view[i]["summary"], view[i]["sent"]
	b, _ := json.Marshal(view)
	st["view"] = b
	b, _ = json.Marshal(st)
	err := mustNew(t, fleetConfig(m, &spill.Memory{}, nil)).Restore(t.Context(), bytes.NewReader(einoguard.SealForTest(b)))
	if !errors.Is(err, einoguard.ErrBadState) {
		t.Fatalf("Restore = %v, want ErrBadState", err)
	}
}

// With a session store, the store holds the conversation: a state
// restored by hand gives way to the stored one at the next pass.
func TestFleetStoreOverRestore(t *testing.T) {
	m := fleetModes[0]
	script := fleetScript(6)
	want := reference(t, m, script)
	s := mustNew(t, fleetConfig(m, &spill.Memory{}, &sessions.Memory{}))
	if _, _, err := s.Prune(t.Context(), cloneList(script[0])); err != nil {
		t.Fatal(err)
	}
	other := mustNew(t, fleetConfig(m, &spill.Memory{}, nil))
	for _, l := range script[:5] {
		if _, _, err := other.Prune(t.Context(), cloneList(l)); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := other.Save(&buf); err != nil {
		t.Fatal(err)
	}
	if err := s.Restore(t.Context(), &buf); err != nil {
		t.Fatal(err)
	}
	out, r, err := s.Prune(t.Context(), cloneList(script[1]))
	if err != nil {
		t.Fatal(err)
	}
	sameSent(t, "after a restore by hand", sentJSON(t, out), want[1])
	if r.Rebuilt {
		t.Error("the pass rebuilt: it ran on the state restored by hand, not the stored one")
	}
}

// The cost of a pass on a conversation of 30 turns, alone, with a store
// (a load that finds the version held and a save), and alternating
// between two replicas (each pass restores the state the other saved).
func BenchmarkFleetPass(b *testing.B) {
	script := fleetScript(30)
	last := script[len(script)-1]
	m := fleetModes[3]
	shared := &sessions.Memory{}
	for _, c := range []struct {
		name     string
		replicas []*einoguard.Session
	}{
		{"alone", []*einoguard.Session{mustNew(b, fleetConfig(m, &spill.Memory{}, nil))}},
		{"store", []*einoguard.Session{mustNew(b, fleetConfig(m, &spill.Memory{}, shared))}},
		{"alternating", []*einoguard.Session{mustNew(b, fleetConfig(m, &spill.Memory{}, shared)), mustNew(b, fleetConfig(m, &spill.Memory{}, shared))}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for _, l := range script {
				if _, _, err := c.replicas[0].Prune(b.Context(), cloneList(l)); err != nil {
					b.Fatal(err)
				}
			}
			in := cloneList(last)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, _, err := c.replicas[i%len(c.replicas)].Prune(b.Context(), in); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// With FailOpen, a pass whose store is down sends the list the session
// guards, with the store's error in the report, and nothing is saved; a
// pass on damaged stored state guards the list afresh.
func TestFleetFailOpen(t *testing.T) {
	down := errors.New("connection refused")
	script := fleetScript(6)
	want := reference(t, fleetModes[0], script)
	for _, step := range []string{"load", "save"} {
		t.Run(step, func(t *testing.T) {
			hooked := &hookStore{Store: &sessions.Memory{}}
			cfg := fleetConfig(fleetModes[0], &spill.Memory{}, hooked)
			cfg.FailOpen = true
			s := mustNew(t, cfg)
			if _, _, err := s.Prune(t.Context(), cloneList(script[0])); err != nil {
				t.Fatal(err)
			}
			stored, v, _ := hooked.Store.Load(t.Context(), cfg.SessionID)
			hooked.loadErr, hooked.saveErr = nil, nil
			if step == "load" {
				hooked.loadErr = down
			} else {
				hooked.saveErr = down
			}
			out, r, err := s.Prune(t.Context(), cloneList(script[1]))
			if err != nil {
				t.Fatal(err)
			}
			var se *einoguard.StoreError
			if !errors.As(r.StoreErr, &se) || se.Op != step || !errors.Is(r.StoreErr, down) {
				t.Fatalf("report's StoreErr = %v, want the %s failure", r.StoreErr, step)
			}
			sameSent(t, "failing open", sentJSON(t, out), want[1])
			hooked.loadErr, hooked.saveErr = nil, nil
			now, nv, err := hooked.Store.Load(t.Context(), cfg.SessionID)
			if err != nil || nv != v || !bytes.Equal(now, stored) {
				t.Errorf("a pass failing open changed the stored state (%v)", err)
			}
		})
	}
	t.Run("damaged", func(t *testing.T) {
		store := &sessions.Memory{}
		cfg := fleetConfig(fleetModes[0], &spill.Memory{}, store)
		cfg.FailOpen = true
		if _, err := store.Save(t.Context(), cfg.SessionID, []byte("not a state"), sessions.Absent); err != nil {
			t.Fatal(err)
		}
		long := fleetScript(20)[19]
		out, r, err := mustNew(t, cfg).Prune(t.Context(), cloneList(long))
		if err != nil || !errors.Is(r.StoreErr, einoguard.ErrBadState) {
			t.Fatalf("err %v, report's StoreErr %v; want none and ErrBadState", err, r.StoreErr)
		}
		fresh, _, err := mustNew(t, fleetConfig(fleetModes[0], &spill.Memory{}, nil)).Prune(t.Context(), cloneList(long))
		if err != nil {
			t.Fatal(err)
		}
		sameSent(t, "failing open on damaged state", sentJSON(t, out), sentJSON(t, fresh))
		if len(out) >= len(long) {
			t.Errorf("sent %d of %d messages: the list was not guarded", len(out), len(long))
		}
	})
}

// savedFields runs the first steps of the fleet script through a session
// of mode m and returns the members of its saved state, the digest left
// out, for a test to edit and seal again.
func savedFields(t *testing.T, m fleetMode, steps int) map[string]json.RawMessage {
	t.Helper()
	s := mustNew(t, fleetConfig(m, &spill.Memory{}, nil))
	for _, l := range fleetScript(steps) {
		if _, _, err := s.Prune(t.Context(), cloneList(l)); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := s.Save(&buf); err != nil {
		t.Fatal(err)
	}
	obj := buf.Bytes()
	obj = append(bytes.Clone(obj[:bytes.LastIndex(obj, []byte(`,"sha256":"`))]), '}')
	var st map[string]json.RawMessage
	if err := json.Unmarshal(obj, &st); err != nil {
		t.Fatal(err)
	}
	return st
}
