package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/output.golden from the program's output")

func TestRun(t *testing.T) {
	var a, b bytes.Buffer
	require.Equal(t, 0, run(&a), a.String())
	require.Equal(t, 0, run(&b))
	out := a.String()
	assert.Equal(t, out, b.String(), "the output is the same at every run")
	assert.NotContains(t, out, "FAILED")

	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	assert.Equal(t, "An agent session of about 300 turns; the guard prunes above 12000 tokens of prompt, down to 8000.", lines[0])
	assert.Equal(t, "OK: nothing that left the prompt was lost", lines[len(lines)-1])

	// The fact: a non-idempotent tool's result, irreducible.
	assert.Regexp(t, `(?m)^turn 1: create_ticket answers \{"ticket":"LEDG-4817",.*\}: irreducible `, out)
	// Results larger than their pointer text are spilled at the first
	// prune and their stubs show the pointer; the ticket's result is
	// smaller, so it is not stubbed: it stays whole until its unit is
	// evicted, spilled with others, behind a line in the system prompt.
	assert.Regexp(t, `(?m)^prune 1, before turn \d+: prompt \d+ -> \d+ tokens`, out)
	assert.Regexp(t, `(?m)^  spilled  seg-1: r\d+, \d+ tokens; written, read back, compared$`, out)
	// A pointer's text says what its segment holds.
	assert.Regexp(t, `\n  prompt   r\d+ now reads \[content moved to scratch:seg-1 to save context \(1 message r\d+; facts: [^)]+\); call recall with key "seg-1" to read it back\]\n`, out)
	assert.NotContains(t, out, "prompt   r1 now reads", "a stub would not make the ticket's result smaller")
	seg := regexp.MustCompile(`(?m)^  spilled  (seg-\d+): \d+ messages of \d+ units, a1 \.\. `).FindStringSubmatch(out)
	require.NotNil(t, seg, "the ticket's unit leaves spilled")
	assert.Regexp(t, `\n  prompt   the system prompt gains the line \[content moved to scratch:`+seg[1]+
		` to save context \(\d+ messages a1\.\.a\d+; tools: create_ticket[^)]*\); call recall with key "`+seg[1]+`" to read it back\]\n`, out)
	// Later the model follows the pointers and reads it back, identical.
	assert.Regexp(t, `(?m)^turn \d+: the model must post the fix on its ticket; the id is not in its prompt \(\d+ tokens\), which shows \d+ pointers$`, out)
	assert.Regexp(t, `(?m)^turn \d+: the model calls recall \{"key":"`+seg[1]+`"\}: \d+ messages come back`, out)
	assert.Regexp(t, `(?m)^turn \d+: the model reads LEDG-4817 in r1, recalled from `+seg[1]+`; identical to what create_ticket answered: true$`, out)
	assert.Contains(t, out, "\ntickets opened 1 [LEDG-4817], comments posted on LEDG-4817: 1\n")
	assert.NotContains(t, out, pruneguard.DefaultStubText, "the trace never shows the stub text for spilled content")

	// Per prune, not per turn; and no prompt sent over the window.
	prunes := regexp.MustCompile(`(?m)^prune (\d+), before turn \d+: prompt (\d+) -> (\d+) tokens \(pointer text \d+ -> \d+ of it; the Context's count (\d+) -> \d+\)`).FindAllStringSubmatch(out, -1)
	require.NotEmpty(t, prunes)
	turns := regexp.MustCompile(`(?m)^turns (\d+), messages \d+, prunes (\d+), segments (\d+), recalls by the model (\d+)$`).FindStringSubmatch(out)
	require.NotNil(t, turns)
	assert.Equal(t, strconv.Itoa(len(prunes)), turns[2])
	assert.GreaterOrEqual(t, atoi(t, turns[1]), 250, "a long session")
	assert.Less(t, len(prunes), atoi(t, turns[1])/5, "prunes come seldom: the trigger is above the budget")
	for _, p := range prunes {
		// The Context counts every pointer line at its longest, so it
		// may reach the trigger a little before the prompt does.
		assert.Greater(t, atoi(t, p[4]), window, "prune %s ran over the trigger", p[1])
		assert.Greater(t, atoi(t, p[2]), window*98/100, "prune %s ran near the trigger", p[1])
		assert.LessOrEqual(t, atoi(t, p[3]), budget, "prune %s brought the prompt under the budget", p[1])
	}
	// The Context counts the pointer text: no prune ends over the budget
	// for it, and its count is never below the prompt's.
	assert.Contains(t, out, "\nprunes that ended over the budget of 8000: 0, 0 of them by pointer text the Context does not count\n")
	for _, m := range regexp.MustCompile(`prompt (\d+) -> (\d+) tokens \(pointer text \d+ -> \d+ of it; the Context's count (\d+) -> (\d+)\)`).FindAllStringSubmatch(out, -1) {
		assert.LessOrEqual(t, atoi(t, m[1]), atoi(t, m[3]))
		assert.LessOrEqual(t, atoi(t, m[2]), atoi(t, m[4]))
	}
	sent := regexp.MustCompile(`the largest sent (\d+), window`).FindStringSubmatch(out)
	require.NotNil(t, sent)
	assert.LessOrEqual(t, atoi(t, sent[1]), window)
	left := regexp.MustCompile(`(?m)^left the prompt: (\d+) messages; (\d+) went as reconstructible .*; (\d+) read back identical`).FindStringSubmatch(out)
	require.NotNil(t, left)
	assert.Equal(t, atoi(t, left[1]), atoi(t, left[2])+atoi(t, left[3]))
	assert.Positive(t, atoi(t, left[3]))
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// The whole output, kept in testdata/output.golden; go test -update
// rewrites it.
func TestGolden(t *testing.T) {
	var out bytes.Buffer
	require.Equal(t, 0, run(&out), out.String())
	golden := filepath.Join("testdata", "output.golden")
	if *update {
		require.NoError(t, os.WriteFile(golden, out.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), out.String())
}

// Without a spill store the guard may not let the ticket id go: the
// example notices that it showed nothing and fails.
func TestWithoutSpilling(t *testing.T) {
	var out bytes.Buffer
	rt := play(t.Context(), &out, &spill.Spiller{Store: &spill.Memory{}}, false)
	assert.Equal(t, 1, rt.summary(t.Context(), nil))
	assert.Contains(t, out.String(), "FAILED: the ticket id never left the prompt")
	assert.Zero(t, rt.m.from)
}

// A segment the store loses after the session is found by the final
// check, which reads every pointer back.
func TestLostSegment(t *testing.T) {
	store := &spill.Memory{}
	var out bytes.Buffer
	rt := play(t.Context(), &out, &spill.Spiller{Store: store, Name: "scratch"}, true)
	p := rt.orig["r1"].Pointer
	require.True(t, p.IsZero(), "the original is kept as appended")
	for _, d := range rt.left {
		if d.id == "r1" {
			p = d.ptr
		}
	}
	require.False(t, p.IsZero(), "r1 left behind a pointer")
	store.Delete(p.Key)
	assert.Equal(t, 1, rt.summary(t.Context(), nil))
	assert.Regexp(t, `FAILED: r1: its pointer does not read back: .*not found`, out.String())
}

// A spilled message that comes back different is found too.
func TestDiffer(t *testing.T) {
	m := pruneguard.Message{ID: "r", Role: pruneguard.RoleTool, Content: []byte("x"), Answers: []pruneguard.CallID{"c"},
		Calls: []pruneguard.Call{{ID: "k", Tool: "t", Args: []byte(`{}`)}}}
	assert.Empty(t, differ(m, m))
	for want, change := range map[string]func(*pruneguard.Message){
		"role":    func(m *pruneguard.Message) { m.Role = pruneguard.RoleUser },
		"content": func(m *pruneguard.Message) { m.Content = []byte("y") },
		"answers": func(m *pruneguard.Message) { m.Answers = nil },
		"facts":   func(m *pruneguard.Message) { m.Facts = pruneguard.OneTimeSecret },
		"calls":   func(m *pruneguard.Message) { m.Calls = nil },
		"call k": func(m *pruneguard.Message) {
			m.Calls = []pruneguard.Call{{ID: "k", Tool: "t", Args: []byte(`{"a":1}`)}}
		},
	} {
		n := m
		change(&n)
		assert.Equal(t, want, differ(m, n))
	}
}

// What the model reads: every stubbed result shows the pointer text when
// its content was spilled and the stub text only when it is
// reconstructible; every segment evicted content lives in has a line.
func TestPrompt(t *testing.T) {
	rt := play(t.Context(), io.Discard, &spill.Spiller{Store: &spill.Memory{}, Name: "scratch"}, true)
	texts := map[pruneguard.MessageID]string{}
	prompt := rt.prompt()
	for i, m := range rt.c.Messages() {
		texts[m.ID] = prompt[i].Text
	}
	stubs := 0
	for id := range rt.stubbed {
		m, ok := rt.c.Message(id)
		require.True(t, ok)
		stubs++
		if m.Pointer.IsZero() {
			assert.Equal(t, pruneguard.DefaultStubText, texts[id], "%s", id)
			// It went as reconstructible, and was obtained again then
			// (its class now may differ: a later patch makes reads stale).
			i := slices.IndexFunc(rt.left, func(d departure) bool { return d.id == id })
			require.GreaterOrEqual(t, i, 0, "%s", id)
			assert.NotEmpty(t, rt.left[i].redo, "%s", id)
		} else {
			assert.Equal(t, rt.sp.PointerText(m.Pointer), texts[id], "%s", id)
			assert.Contains(t, texts[id], "(1 message "+string(id), "%s: the text says what the segment holds", id)
		}
	}
	assert.Positive(t, stubs)
	sys := prompt[0].Text
	for _, d := range rt.left {
		_, stays := rt.c.Message(d.id)
		if !d.ptr.IsZero() && !stays {
			assert.Contains(t, sys, rt.sp.PointerText(d.ptr), "%s left behind a pointer the prompt must show", d.id)
		}
	}
}
