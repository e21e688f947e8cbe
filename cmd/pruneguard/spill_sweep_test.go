package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// unitReach returns the body's tokens once every unit is evicted but
// those of the last user turn (the last real user message, and after it,
// when the body carries reasoning or signed calls, every message: the
// provider requires the turn's reasoning and calls back, so the screen
// keeps its units from eviction), those holding a system message,
// those with a call still pending and those holding a message the model
// has not read yet (after its last message): how far evicting whole units
// oldest first can go. Where the provider requires the history to begin with a
// user turn (Anthropic, Gemini, Bedrock), an eviction that would leave it
// beginning otherwise is no safe prune: the newest evicted unit that
// begins with a user message stays. When content that cannot be obtained
// again goes, the least it costs is one pointer line, which is added.
func unitReach(t *testing.T, body []byte, d wire.Dialect) int {
	t.Helper()
	g, err := wire.Bind(body, d, wire.Options{Config: pruneguard.Config{Regen: pruneguard.RegenDropUnsafe}})
	if err != nil {
		t.Fatal(err)
	}
	c := g.Context()
	ms := c.Messages()
	last := -1
	for i, m := range ms {
		if m.Role == pruneguard.RoleUser && len(m.Answers) == 0 {
			last = i
		}
	}
	b, err := wire.Read(body, d)
	if err != nil {
		t.Fatal(err)
	}
	turn := false // the body carries reasoning or signed calls
	for _, m := range b.Messages {
		turn = turn || m.Reasoning || slices.ContainsFunc(m.Calls, func(c wire.Call) bool { return c.Signed })
	}
	keep := map[pruneguard.MessageID]bool{}
	for i, m := range ms {
		if m.Role == pruneguard.RoleSystem || i == last || (last >= 0 && i > last && (m.Pinned || turn)) {
			keep[m.ID] = true
		}
	}
	role := map[pruneguard.MessageID]pruneguard.Role{}
	for _, m := range ms {
		role[m.ID] = m.Role
	}
	userFirst := d == wire.Anthropic || d == wire.Gemini || d == wire.Bedrock
	units := c.Units()
	evict := make([]bool, len(units))
	for i, u := range units {
		kept := len(u.Pending) > 0 || u.Open || u.Unread
		for _, id := range u.Messages {
			kept = kept || keep[id]
		}
		evict[i] = !kept
	}
	if userFirst {
		first, back := -1, -1
		for i, u := range units {
			if !evict[i] && role[u.Messages[0]] != pruneguard.RoleSystem {
				first = i
				break
			}
			if evict[i] && role[u.Messages[0]] == pruneguard.RoleUser {
				back = i
			}
		}
		if first >= 0 && role[units[first].Messages[0]] != pruneguard.RoleUser && back >= 0 {
			evict[back] = false
		}
	}
	reach, lost := g.Tokens(), false
	for i, u := range units {
		if !evict[i] {
			continue
		}
		reach -= u.Tokens
		for _, id := range u.Messages {
			if cl, _ := c.ClassOf(id); cl != pruneguard.Reconstructible {
				lost = true
			}
		}
	}
	if lost {
		line := spill.PointerText(pruneguard.Pointer{Store: spill.DefaultName, Key: "seg-00000000-0000-0000-0000-000000000000"})
		reach += (len(line) + 3) / 4
	}
	return reach
}

// TestSpillSweep prunes every recorded transcript at 25%, 50% and 75% of
// its tokens with each policy, under MCP's defaults (unannotated tools
// are irreducible), spilling to a directory: whenever evicting whole
// units oldest first (keeping the system prompt, the pending batch, what
// the model has not read and the last user turn) reaches 85% of the
// budget, the prune reaches the budget. Its output is never worse under
// Validate than its input, every
// message it evicts or stubs is reconstructible or spilled, and each
// spilled key reads back the input's messages.
func TestSpillSweep(t *testing.T) {
	var runs, reachable, reached, exit3, spilledRuns int
	for _, path := range transcripts(t) {
		name, _ := filepath.Rel(transcriptDir, path)
		file, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		body, d, err := wire.Unwrap(file, path)
		if err != nil {
			t.Fatalf("%s: Unwrap: %v", name, err)
		}
		in, err := wire.Read(body, d)
		if err != nil {
			t.Fatalf("%s: Read: %v", name, err)
		}
		inV := in.Validate()
		inMsgs := messagesOf(t, body, in.Dialect)
		total := wire.Tokens(in, nil)
		reach := unitReach(t, body, d)
		for _, pct := range []int{25, 50, 75} {
			for _, pol := range []string{"oldest", "largest", "keep-last-tools"} {
				budget := total * pct / 100
				dir := t.TempDir()
				sp := &spill.Spiller{Store: spill.Dir(dir)}
				o := pruneOpts{budget: budget, policy: pol, keep: 3, boundary: pruneguard.BoundaryRelaxed, spiller: sp, full: true}
				g, rep, code, err := prune(body, d, o)
				runs++
				if err != nil {
					t.Errorf("%s %d%% %s: %v", name, pct, pol, err)
					continue
				}
				switch code {
				case 0:
					reached++
				case 3:
					exit3++
				}
				if len(rep.Spilled) > 0 {
					spilledRuns++
				}
				if reach*100 <= budget*85 {
					reachable++
					if code != 0 || !rep.WithinBudget {
						t.Errorf("%s %d%% %s: units reach %d of budget %d, prune --spill exits %d at %d: %s",
							name, pct, pol, reach, budget, code, rep.OutputTokens, rep.Description)
					}
				}
				var buf bytes.Buffer
				if _, err := g.WriteTo(&buf); err != nil {
					t.Fatal(err)
				}
				ob, err := wire.Read(buf.Bytes(), rep.Dialect)
				if err != nil {
					t.Errorf("%s %d%% %s: output does not read: %v", name, pct, pol, err)
					continue
				}
				if nv := wire.NewViolations(inV, ob.Validate()); len(nv) > 0 {
					t.Errorf("%s %d%% %s: output worse than input: %v", name, pct, pol, nv)
				}
				if rep.OutputTokens > rep.InputTokens {
					t.Errorf("%s %d%% %s: tokens %d -> %d", name, pct, pol, rep.InputTokens, rep.OutputTokens)
				}
				checkSpilled(t, name, body, d, inMsgs, rep, sp)
			}
		}
	}
	t.Logf("%d runs: %d where whole units reach 85%% of the budget; %d reached the budget, %d exit 3; %d spilled",
		runs, reachable, reached, exit3, spilledRuns)
}

// messagesOf returns the history of a request body, message by message.
func messagesOf(t *testing.T, body []byte, d wire.Dialect) []json.RawMessage {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatal(err)
	}
	key := map[wire.Dialect]string{wire.OpenAIResponses: "input", wire.Gemini: "contents"}[d]
	if key == "" {
		key = "messages"
	}
	var ms []json.RawMessage
	if err := json.Unmarshal(top[key], &ms); err != nil {
		// A Responses input given as a string is one message.
		ms = []json.RawMessage{top[key]}
	}
	return ms
}

// checkSpilled checks a full report against the input: every message
// evicted or stubbed is reconstructible under the rules in force or
// stored under a spilled key, and every key reads back the input's
// messages at its indexes.
func checkSpilled(t *testing.T, name string, body []byte, d wire.Dialect, in []json.RawMessage, rep Report, sp *spill.Spiller) {
	t.Helper()
	ctx := t.Context()
	g, err := wire.Bind(body, d, wire.Options{Config: pruneguard.Config{Regen: pruneguard.RegenDropUnsafe}})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[int]bool{}
	for _, s := range rep.Spilled {
		ms, err := sp.Recall(ctx, pruneguard.Pointer{Store: spill.DefaultName, Key: s.Key})
		if err != nil {
			t.Errorf("%s: recall %s: %v", name, s.Key, err)
			continue
		}
		if len(ms) != len(s.Indexes) {
			t.Errorf("%s: key %s holds %d messages, the report lists %d", name, s.Key, len(ms), len(s.Indexes))
			continue
		}
		for k, i := range s.Indexes {
			stored[i] = true
			if !jsonEqual(ms[k].Content, in[i]) {
				t.Errorf("%s: key %s message %d is not the input's message %d", name, s.Key, k, i)
			}
		}
	}
	gone := func(i int) {
		if stored[i] {
			return
		}
		if c, ok := g.Context().ClassOf(wire.ID(i)); !ok || c != pruneguard.Reconstructible {
			t.Errorf("%s %s %s: message %d (%v) left the prompt, neither reconstructible nor spilled", name, rep.Policy, rep.Description, i, c)
		}
	}
	for _, u := range rep.Evicted {
		for _, i := range u.Indexes {
			gone(i)
		}
	}
	for _, m := range rep.Stubbed {
		gone(m.Index)
	}
}
