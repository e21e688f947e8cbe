package wire_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// historyKey is the history's member in dialect d.
func historyKey(d wire.Dialect) string {
	switch d {
	case wire.OpenAIResponses:
		return "input"
	case wire.Gemini:
		return "contents"
	}
	return "messages"
}

// growingBodies returns the bodies a runtime sends for the history of
// body: one before each turn of the model's, and the whole body last.
// ok is false for a history that is not a list.
func growingBodies(t testing.TB, d wire.Dialect, body []byte) (bodies [][]byte, ok bool) {
	t.Helper()
	var top map[string]json.RawMessage
	must(t, json.Unmarshal(body, &top))
	key := historyKey(d)
	var msgs []json.RawMessage
	if json.Unmarshal(top[key], &msgs) != nil || len(msgs) == 0 {
		return nil, false
	}
	at := func(k int) []byte {
		top[key] = json.RawMessage("[" + string(bytes.Join(toBytes(msgs[:k]), []byte(","))) + "]")
		b, err := json.Marshal(top)
		must(t, err)
		return b
	}
	for k := 1; k < len(msgs); k++ {
		if modelTurn(msgs[k]) {
			bodies = append(bodies, at(k))
		}
	}
	return append(bodies, at(len(msgs))), true
}

func toBytes(ms []json.RawMessage) [][]byte {
	out := make([][]byte, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

// twinConfig is a session that prunes, spills to store and summarizes,
// for a history of about total tokens.
func twinConfig(d wire.Dialect, total int, store spill.Store) wire.SessionConfig {
	budget := max(total/4, 400)
	return wire.SessionConfig{Dialect: d, Guard: pruneguard.Guard{Budget: budget, Summarizer: pruneguard.Digest{}},
		Trigger: budget + budget/3, Spiller: &spill.Spiller{Store: store}}
}

// twinCase is a history to play in twin runs.
type twinCase struct {
	name string
	d    wire.Dialect
	body []byte
}

func twinCases(t *testing.T) []twinCase {
	var cs []twinCase
	names := slices.Sorted(maps.Keys(transcripts(t)))
	all := transcripts(t)
	for i, name := range names {
		if (testing.Short() || raceEnabled) && i%3 != 0 {
			continue // a sample, in every dialect
		}
		cs = append(cs, twinCase{name, all[name].d, all[name].body})
	}
	for _, d := range wire.Dialects {
		cs = append(cs, twinCase{"facts/" + string(d), d, []byte(factBody(d, 40))})
	}
	return cs
}

// TestSessionSaveRestoreTwins: a session saved and restored every few
// requests, fed the same bodies as a session never restored, in every
// dialect, over the recorded transcripts and a long history of facts,
// with a guard that prunes, spills and summarizes, sends the same bodies
// and reports the same; a restored session renders the body the saved
// one rendered, and saves the state it was restored from.
func TestSessionSaveRestoreTwins(t *testing.T) {
	var evicted, spilled, summarized, restores int
	every := 3 // requests between restores
	if testing.Short() || raceEnabled {
		every = 9
	}
	for _, tc := range twinCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			bodies, ok := growingBodies(t, tc.d, tc.body)
			if !ok {
				t.Skip("the history is not a list")
			}
			total := wire.Tokens(mustRead(t, tc.body, tc.d), nil)
			one, err := wire.NewSession(twinConfig(tc.d, total, &spill.Memory{}))
			must(t, err)
			store := &spill.Memory{}
			twin, err := wire.NewSession(twinConfig(tc.d, total, store))
			must(t, err)
			for i, body := range bodies {
				want, wantRep, wantErr := one.Sync(body)
				got, gotRep, gotErr := twin.Sync(body)
				if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
					t.Fatalf("request %d: error %v, want %v", i, gotErr, wantErr)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("request %d: the restored session sent another body\n got %s\nwant %s", i, got, want)
				}
				if a, b := reportJSON(t, gotRep), reportJSON(t, wantRep); a != b {
					t.Fatalf("request %d: report\n got %s\nwant %s", i, a, b)
				}
				evicted += len(wantRep.Evicted)
				spilled += len(wantRep.Result.Spills)
				summarized += len(wantRep.Summarized)
				if i%every == every-1 {
					twin = saveRestore(t, twin, twinConfig(tc.d, total, store))
					restores++
				}
			}
		})
	}
	t.Logf("%d restores; the twins evicted %d messages, spilled %d times, summarized %d times", restores, evicted, spilled, summarized)
	if evicted == 0 || spilled == 0 || summarized == 0 || restores == 0 {
		t.Fatalf("the twin runs did not exercise the guard: %d evicted, %d spills, %d summaries, %d restores", evicted, spilled, summarized, restores)
	}
}

// saveRestore saves s and restores it with cfg, checking that the
// restored session renders the same body and saves the same state.
func saveRestore(t testing.TB, s *wire.Session, cfg wire.SessionConfig) *wire.Session {
	t.Helper()
	var state, before, after, again bytes.Buffer
	must(t, s.Save(&state))
	_, err := s.WriteTo(&before)
	must(t, err)
	r, err := wire.RestoreSession(bytes.NewReader(state.Bytes()), cfg)
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	_, err = r.WriteTo(&after)
	must(t, err)
	if !bytes.Equal(before.Bytes(), after.Bytes()) {
		t.Fatalf("the restored session renders another body\n got %s\nwant %s", after.Bytes(), before.Bytes())
	}
	must(t, r.Save(&again))
	if !bytes.Equal(state.Bytes(), again.Bytes()) {
		t.Fatalf("the restored session saves another state")
	}
	return r
}

func reportJSON(t testing.TB, rep wire.Report) string {
	b, err := json.Marshal(rep)
	must(t, err)
	return string(b)
}

// TestSessionSaveRestoreReset: a session restored after a body that did
// not continue its history (a reset) goes on as one never restored.
func TestSessionSaveRestoreReset(t *testing.T) {
	for _, d := range wire.Dialects {
		t.Run(string(d), func(t *testing.T) {
			first, _ := growingBodies(t, d, []byte(factBody(d, 12)))
			other := strings.Replace(factBody(d, 16), "the task: look the items up", "another task: look them up again", 1)
			second, _ := growingBodies(t, d, []byte(other))
			bodies := append(first[:len(first)/2], second...)
			total := wire.Tokens(mustRead(t, []byte(other), d), nil)
			one, err := wire.NewSession(twinConfig(d, total, &spill.Memory{}))
			must(t, err)
			store := &spill.Memory{}
			twin, err := wire.NewSession(twinConfig(d, total, store))
			must(t, err)
			resets := 0
			for i, body := range bodies {
				want, wantRep, wantErr := one.Sync(body)
				got, gotRep, gotErr := twin.Sync(body)
				if !bytes.Equal(got, want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || reportJSON(t, gotRep) != reportJSON(t, wantRep) {
					t.Fatalf("request %d: the restored session differs", i)
				}
				if wantRep.Reset {
					resets++
				}
				twin = saveRestore(t, twin, twinConfig(d, total, store))
			}
			if resets != 1 {
				t.Fatalf("%d resets, want 1", resets)
			}
		})
	}
}
