package pruneguard_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pg "github.com/pruneguard/pruneguard"
)

// negCounter counts every text as a negative number of tokens.
type negCounter struct{}

func (negCounter) Count([]byte) int { return -40 }

// A negative count counts as zero (see [pg.Counter]), from the
// SummaryCounter as from the Counter: a summary never adds to what its
// run frees, nor takes from what the Context holds.
func TestSummaryNegativeCountIsZero(t *testing.T) {
	for name, cfg := range map[string]pg.Config{
		"SummaryCounter": {Counter: pg.ApproxCounter{}, SummaryCounter: negCounter{}},
		"Counter":        {Counter: negCounter{}},
	} {
		t.Run(name, func(t *testing.T) {
			c := pg.NewContext(cfg)
			for _, m := range []pg.Message{
				{ID: "u1", Role: pg.RoleUser, Tokens: 30, Content: []byte("check INC-7")},
				{ID: "a1", Role: pg.RoleAssistant, Tokens: 30, Content: []byte("INC-7 is open")},
				{ID: "u2", Role: pg.RoleUser, Tokens: 5, Content: []byte("next")},
			} {
				require.NoError(t, c.Append(m))
			}
			b, err := c.Brief(pg.Plan{Summary: &pg.Summary{Replace: []pg.MessageID{"u1", "a1"}}})
			require.NoError(t, err)
			d, err := c.Prune(pg.Plan{Summary: &pg.Summary{Replace: b.Replace, ID: "s1", Text: "Summary: INC-7 is open."}})
			require.NoError(t, err)
			require.NotNil(t, d.Summary)
			assert.Equal(t, 0, d.Summary.Tokens)
			assert.Equal(t, 60, d.Freed, "the run's tokens, no more")
			require.NoError(t, c.Apply(d))
			assert.Equal(t, 5, c.Tokens())
		})
	}
}

// scriptedSummarizer answers its first call as Digest fills its Room
// plus extra bytes, and each later call with again; it counts its calls
// by run.
type scriptedSummarizer struct {
	extra string
	again func(ctx context.Context, b *pg.Brief) (string, error)
	calls map[pg.MessageID]int
	rooms []int
	first string
}

func (s *scriptedSummarizer) Summarize(ctx context.Context, b *pg.Brief) (string, error) {
	s.calls[b.Replace[0]]++
	s.rooms = append(s.rooms, b.Room)
	if len(s.rooms) == 1 {
		text, err := pg.Digest{MaxTokens: 10000}.Summarize(ctx, b)
		s.first = text + s.extra
		return s.first, err
	}
	return s.again(ctx, b)
}

// A summary the Context counts over its share is asked for once more,
// and only once; when the second answer is an error, blank or no
// shorter, the first text is the one applied.
func TestSummaryAskedAgainKeepsFirst(t *testing.T) {
	for name, again := range map[string]func(ctx context.Context, b *pg.Brief) (string, error){
		"error":  func(context.Context, *pg.Brief) (string, error) { return "shorter", errors.New("model down") },
		"blank":  func(context.Context, *pg.Brief) (string, error) { return " \n\t", nil },
		"longer": func(context.Context, *pg.Brief) (string, error) { return strings.Repeat("longer text ", 500), nil },
	} {
		t.Run(name, func(t *testing.T) {
			c := pg.NewContext(pg.Config{Counter: pg.ApproxCounter{}, SummaryCounter: wrapCounter{}})
			for i := range 10 {
				ticketTurn(t, c, i)
			}
			s := &scriptedSummarizer{again: again, calls: map[pg.MessageID]int{}}
			g := pg.Guard{Budget: c.Tokens() / 2, Summarizer: s}
			res, err := g.Check(c)
			require.NoError(t, err)
			require.Len(t, s.rooms, 2, "asked once more")
			for id, n := range s.calls {
				assert.LessOrEqual(t, n, 2, "run at %s", id)
			}
			assert.Empty(t, res.SummaryErrors, "the first text stands")
			var texts []string
			for _, d := range res.Decisions {
				if d.Summary != nil {
					texts = append(texts, d.Summary.Text)
				}
			}
			assert.Equal(t, []string{s.first}, texts)
		})
	}
}

// The second Room is never more than the first, though the first text
// ignored its Room: the Room asked for again is the smaller of the
// first Room and the text's tokens, less the excess.
func TestSummaryAskedAgainRoomShrinks(t *testing.T) {
	c := pg.NewContext(pg.Config{Counter: pg.ApproxCounter{}})
	for i := range 10 {
		ticketTurn(t, c, i)
	}
	s := &scriptedSummarizer{extra: strings.Repeat(" padding", 60), calls: map[pg.MessageID]int{},
		again: func(ctx context.Context, b *pg.Brief) (string, error) { return pg.Digest{}.Summarize(ctx, b) }}
	g := pg.Guard{Budget: c.Tokens() / 2, Summarizer: s}
	_, err := g.Check(c)
	require.NoError(t, err)
	require.Len(t, s.rooms, 2)
	r1, n := s.rooms[0], pg.ApproxCounter{}.Count([]byte(s.first))
	require.Greater(t, n, r1, "the first text ignored its Room")
	var want []int // the first Room was room-8-room/32, room being the share
	for room := r1; room < 2*r1+64; room++ {
		if room-8-room/32 == r1 {
			want = append(want, max(1, min(r1, n)-(n-room)))
		}
	}
	assert.Contains(t, want, s.rooms[1], "first Room %d, text %d tokens", r1, n)
	assert.Less(t, s.rooms[1], r1)
}

// A run cut short before a message only a pointer could stand for (with
// no Spill store) takes its share of what must be freed by what is left
// of it, the part cut off freeing nothing: its summary frees what the
// check must, and the check reaches its budget with no eviction.
func TestGuardCompactsCutRunToBudget(t *testing.T) {
	c := pg.NewContext(pg.Config{Counter: pg.ApproxCounter{}})
	for i := range 10 {
		ticketTurn(t, c, i)
		if i == 6 {
			require.NoError(t, c.Append(pg.Message{ID: "secret", Role: pg.RoleUser, Facts: pg.OneTimeSecret, Content: []byte("nonce " + strings.Repeat("zq", 200))}))
			require.NoError(t, c.Append(pg.Message{ID: "ack", Role: pg.RoleAssistant, Content: []byte("ok")}))
		}
	}
	g := pg.Guard{Budget: c.Tokens() / 2, Summarizer: pg.Digest{}}
	res, err := g.Check(c)
	require.NoError(t, err)
	require.Len(t, res.Decisions, 1, "one summary: %v", res.Reason)
	s := res.Decisions[0].Summary
	require.NotNil(t, s)
	assert.NotContains(t, s.Replace, pg.MessageID("secret"), "the run ends before the secret")
	assert.NoError(t, res.Reason)
	assert.LessOrEqual(t, c.Tokens(), g.Budget)
}

// A second answer shorter than the first but one the gates refuse (it
// drops a fact the Brief requires) does not cost the run its summary:
// the first text, which the gates pass, is applied.
func TestSummaryAskedAgainRefusedKeepsFirst(t *testing.T) {
	c := pg.NewContext(pg.Config{Counter: pg.ApproxCounter{}, SummaryCounter: wrapCounter{}})
	require.NoError(t, c.RegisterTool(pg.Tool{Name: "lookup"}))
	for i := range 8 {
		orderTurn(t, c, i)
	}
	s := &scriptedSummarizer{extra: strings.Repeat(" padding", 60), calls: map[pg.MessageID]int{},
		again: func(context.Context, *pg.Brief) (string, error) { return "[Summary] Orders were checked.", nil }}
	g := pg.Guard{Budget: c.Tokens() / 2, Summarizer: s}
	res, err := g.Check(c)
	require.NoError(t, err)
	require.Len(t, s.rooms, 2, "asked once more")
	var texts []string
	for _, d := range res.Decisions {
		if d.Summary != nil {
			texts = append(texts, d.Summary.Text)
		}
	}
	assert.Equal(t, []string{s.first}, texts, "refused: %v", res.Refused)
}
