package pruneguard

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of the summary gate's limits, each at its edge: the size of a
// summary against its run's, the counter that sizes a summary given no
// tokens, the longest text carried whole, and a fact a message holds
// twice.

// codesOf returns the codes of the violations of a refused plan.
func codesOf(t *testing.T, err error) []Code {
	t.Helper()
	var pe *PruneError
	require.ErrorAs(t, err, &pe)
	var codes []Code
	for _, v := range pe.Violations {
		codes = append(codes, v.Code)
	}
	return codes
}

// A summary must be smaller than its run: one token less stands, as
// many tokens is refused.
func TestSummaryAsLargeAsItsRun(t *testing.T) {
	c := debugSession(t, Config{})
	run := Summary{Replace: []MessageID{"u2"}, ID: "s1", Text: "The user said: Go on."} // u2 counts 10
	smaller := run
	smaller.Tokens = 9
	d, err := c.Prune(Plan{Summary: &smaller})
	require.NoError(t, err)
	assert.Equal(t, 1, d.Freed)
	equal := run
	equal.Tokens = 10
	_, err = c.Prune(Plan{Summary: &equal})
	assert.Equal(t, []Code{CodeSummaryGrows}, codesOf(t, err))
}

// tenPerByte counts ten tokens a byte, far from ApproxCounter.
type tenPerByte struct{}

func (tenPerByte) Count(b []byte) int { return 10 * len(b) }

// A summary given no tokens is counted by Config.Counter, and without
// one by ApproxCounter: it is never taken as free.
func TestSummaryWithoutTokensIsCounted(t *testing.T) {
	text := "The user said: Go on."
	for name, cfg := range map[string]Config{"counter": {Counter: tenPerByte{}}, "approx": {}} {
		t.Run(name, func(t *testing.T) {
			c := debugSession(t, cfg)
			want := ApproxCounter{}.Count([]byte(text))
			if cfg.Counter != nil {
				want = cfg.Counter.Count([]byte(text))
			}
			// A run as large as the counted summary is refused; one token
			// more and the summary stands, freeing that one token.
			require.NoError(t, c.Append(Message{ID: "u3", Role: RoleUser, Tokens: want, Content: []byte("Go on.")}))
			require.NoError(t, c.Append(Message{ID: "u4", Role: RoleUser, Tokens: want + 1, Content: []byte("Go on.")}))
			require.NoError(t, c.Append(Message{ID: "a5", Role: RoleAssistant, Tokens: 5, Content: []byte("ok")}))
			_, err := c.Prune(Plan{Summary: &Summary{Replace: []MessageID{"u3"}, ID: "s1", Text: text}})
			assert.Equal(t, []Code{CodeSummaryGrows}, codesOf(t, err))
			d, err := c.Prune(Plan{Summary: &Summary{Replace: []MessageID{"u4"}, ID: "s1", Text: text}})
			require.NoError(t, err)
			assert.Equal(t, 1, d.Freed)
		})
	}
}

// A message marked with a fact and holding none the finder knows is
// carried whole up to maxVerbatim bytes of trimmed text; one byte more
// and only its pointer can stand for it.
func TestSummaryLongestTextCarriedWhole(t *testing.T) {
	at := strings.Repeat("be kind ", maxVerbatim/8-1) + "be kind!"
	require.Len(t, at, maxVerbatim)
	for name, text := range map[string]string{"at the limit": at, "one byte over": at + "!"} {
		t.Run(name, func(t *testing.T) {
			c := debugSession(t, Config{})
			require.NoError(t, c.Append(Message{ID: "u3", Role: RoleUser, Tokens: 300, Facts: UserConstraint, Content: []byte("  " + text + "\n")}))
			require.NoError(t, c.Append(Message{ID: "a5", Role: RoleAssistant, Tokens: 5, Content: []byte("sure")}))
			b, err := c.Brief(Plan{Summary: &Summary{Replace: []MessageID{"u3"}}})
			require.NoError(t, err)
			if len(text) > maxVerbatim {
				assert.Empty(t, b.Facts)
				assert.Equal(t, []MessageID{"u3"}, b.Spill)
				_, err = c.Prune(Plan{Summary: &Summary{Replace: []MessageID{"u3"}, ID: "s", Text: "said: " + text}})
				assert.Equal(t, []Code{CodeUserConstraint}, codesOf(t, err), "only a pointer stands for it")
				return
			}
			assert.Equal(t, []Fact{{Message: "u3", Kind: "text", Text: text}}, b.Facts)
			assert.Empty(t, b.Spill)
			_, err = c.Prune(Plan{Summary: &Summary{Replace: []MessageID{"u3"}, ID: "s", Text: "said: " + text}})
			require.NoError(t, err, "the whole text carried")
		})
	}
}

// A fact a message holds in its text and in its call's arguments is
// one fact: asked for once, and named once when the summary drops it.
func TestSummaryFactHeldTwiceIsAskedOnce(t *testing.T) {
	c := debugSession(t, Config{})
	require.NoError(t, c.Append(Message{ID: "a5", Role: RoleAssistant, Tokens: 30, Content: []byte("Filed INC-9001."),
		Calls: []Call{{ID: "c5", Tool: "read_file", Args: json.RawMessage(`{"path":"INC-9001"}`)}}}))
	require.NoError(t, c.Append(Message{ID: "r5", Role: RoleTool, Tokens: 30, Answers: []CallID{"c5"}, Content: []byte("no such file")}))
	require.NoError(t, c.Append(Message{ID: "a6", Role: RoleAssistant, Tokens: 5, Content: []byte("ok")}))
	want := []Fact{{Message: "a5", Kind: "id", Text: "INC-9001"}}
	b, err := c.Brief(Plan{Summary: &Summary{Replace: []MessageID{"a5"}}})
	require.NoError(t, err)
	assert.Equal(t, want, b.Facts)
	_, err = c.Prune(Plan{Summary: &Summary{Replace: b.Replace, ID: "s", Text: "A ticket was filed."}})
	var pe *PruneError
	require.ErrorAs(t, err, &pe)
	require.Len(t, pe.Violations, 1)
	assert.Equal(t, CodeMissingFact, pe.Violations[0].Code)
	assert.Equal(t, want, pe.Violations[0].Facts)
}
