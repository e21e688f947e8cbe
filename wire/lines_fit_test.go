package wire_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/wire"
)

// pastBody returns the body of a recorded transcript cut before its
// message cut, and the tokens of that body.
func pastBody(t *testing.T, name string, cut int) ([]byte, wire.Dialect, int) {
	t.Helper()
	file, err := os.ReadFile(filepath.Join("../testdata/transcripts", name))
	require.NoError(t, err)
	body, d, err := wire.Unwrap(file, filepath.Base(name))
	require.NoError(t, err)
	b, err := wire.Read(body, d)
	require.NoError(t, err)
	var later []int
	for i := cut; i < len(b.Messages); i++ {
		later = append(later, i)
	}
	require.NoError(t, b.Remove(later))
	past, err := b.Marshal()
	require.NoError(t, err)
	return past, d, wire.Tokens(b, nil)
}

// jsonText is s as a JSON string's contents.
func jsonText(s string) string {
	out, _ := json.Marshal(s)
	return string(out[1 : len(out)-1])
}

// compactLines compacts and spills past under budget, as `prune
// --summarize builtin --spill` does, with the budget as a hard ceiling
// too, and returns the body, its tokens, the Spiller and the pointers of
// the check's spills. The check fails with ErrCeiling only when the body
// ends over.
func compactLines(t *testing.T, past []byte, d wire.Dialect, budget int) ([]byte, int, *spill.Spiller, []pruneguard.Pointer) {
	t.Helper()
	sp := &spill.Spiller{Store: &spill.Memory{}}
	g, err := wire.Bind(past, d, wire.Options{
		Config:      pruneguard.Config{Boundary: pruneguard.BoundaryRelaxed, Regen: pruneguard.RegenDropUnsafe, TextClass: pruneguard.Irreducible},
		Unannotated: wire.UnannotatedIrreducible, Spiller: sp,
	})
	require.NoError(t, err)
	res, _, err := g.Check(pruneguard.Guard{Budget: budget, Ceiling: budget, Policy: pruneguard.OldestFirst{}, Rounds: 32, Summarizer: pruneguard.Digest{}})
	if res.After > budget {
		require.ErrorIs(t, err, pruneguard.ErrCeiling, "budget %d", budget)
	} else {
		require.NoError(t, err, "budget %d: within the ceiling", budget)
	}
	var out strings.Builder
	_, err = g.WriteTo(&out)
	require.NoError(t, err)
	b, err := wire.Read([]byte(out.String()), d)
	require.NoError(t, err)
	require.Equal(t, wire.Tokens(b, nil), res.After)
	var ps []pruneguard.Pointer
	for _, s := range res.Spills {
		ps = append(ps, s.Pointer)
	}
	return []byte(out.String()), res.After, sp, ps
}

// A check that would end over its budget only because the pointer line
// it adds carries its segment's description writes that line shorter,
// and ends within budget; the pointer is followed as before. Where the
// described line fits, it is written whole.
func TestPointerLineFallsBackToFit(t *testing.T) {
	past, d, tokens := pastBody(t, fitTranscript, 7)
	seen := map[int]int{}
	for budget := tokens / 2; budget <= tokens*9/10; budget++ {
		body, after, sp, ps := compactLines(t, past, d, budget)
		seen[fitted(t, d, body, after, budget, sp, ps)]++
	}
	require.Positive(t, seen[lineCut], "no budget needed a bare line")
	require.Positive(t, seen[linePart], "no budget needed part of a description")
	require.Positive(t, seen[lineWhole], "no budget kept a described line")
}

// A Session writes its pointer lines shorter by the same rule, and a
// restored session writes them as they were.
func TestSessionPointerLineFallsBackToFit(t *testing.T) {
	past, d, tokens := pastBody(t, fitTranscript, 7)
	seen := map[int]int{}
	for budget := tokens / 2; budget <= tokens*9/10; budget++ {
		store := &spill.Memory{}
		sp := &spill.Spiller{Store: store}
		cfg := wire.SessionConfig{Dialect: d, Spiller: sp,
			Guard:       pruneguard.Guard{Budget: budget, Ceiling: budget, Policy: pruneguard.OldestFirst{}, Rounds: 32, Summarizer: pruneguard.Digest{}},
			Config:      pruneguard.Config{Boundary: pruneguard.BoundaryRelaxed, Regen: pruneguard.RegenDropUnsafe, TextClass: pruneguard.Irreducible},
			Unannotated: wire.UnannotatedIrreducible}
		s, err := wire.NewSession(cfg)
		require.NoError(t, err)
		body, rep, err := s.Sync(past)
		if rep.After > budget {
			require.ErrorIs(t, err, pruneguard.ErrCeiling, "budget %d", budget)
			continue
		}
		require.NoError(t, err, "budget %d: within the ceiling", budget)
		var ps []pruneguard.Pointer
		for _, n := range rep.Result.Spills {
			ps = append(ps, n.Pointer)
		}
		got := fitted(t, d, body, rep.After, budget, sp, ps)
		seen[got]++
		if got != lineCut && got != linePart {
			continue
		}
		var saved bytes.Buffer
		require.NoError(t, s.Save(&saved))
		cfg.Spiller = &spill.Spiller{Store: store}
		r, err := wire.RestoreSession(&saved, cfg)
		require.NoError(t, err)
		var again bytes.Buffer
		_, err = r.WriteTo(&again)
		require.NoError(t, err)
		require.Equal(t, string(body), again.String(), "budget %d: restored, the lines as they were", budget)
	}
	require.Positive(t, seen[lineCut]+seen[linePart], "no budget needed a shorter line")
	require.Positive(t, seen[lineWhole], "no budget kept a described line")
}

// fitTranscript is a recorded session whose past, cut at its seventh
// message, compacts and spills to a single pointer line.
const fitTranscript = "responses/nemo-gym__example_session_state_mgmt__line0.json"

// How a body shows the pointer lines of a check.
const (
	lineNone  = iota // none with a description, or over budget
	lineWhole        // described in full, within budget
	lineCut          // one written bare, within budget
	linePart         // one written with part of its description, within budget
)

// fitted checks the pointer lines of the pointers ps in body, a check's
// output of after tokens under budget: a body over budget is over with
// its described lines written bare too, and has none cut; a body with a
// line cut would be over with its lines whole; every line keeps its key
// and recall instruction, and a cut line's pointer is followed.
func fitted(t *testing.T, d wire.Dialect, body []byte, after, budget int, sp *spill.Spiller, ps []pruneguard.Pointer) int {
	t.Helper()
	text, bare, whole := string(body), string(body), string(body)
	cut, partly, described := false, false, false
	for _, p := range ps {
		full, plain := jsonText(sp.PointerText(p)), jsonText(spill.PointerText(p))
		start := strings.Index(text, jsonText("[content moved to "+p.Store+":"+p.Key))
		if full == plain || start < 0 {
			continue // a pointer the summary carries, or no description
		}
		described = true
		end := strings.Index(text[start:], jsonText(`call recall with key "`+p.Key+`" to read it back]`))
		require.GreaterOrEqual(t, end, 0, "budget %d: a line without its recall instruction", budget)
		shown := text[start : start+end+len(jsonText(`call recall with key "`+p.Key+`" to read it back]`))]
		if shown != full {
			cut = true
			partly = shown != plain
			whole = strings.Replace(whole, shown, full, 1)
		}
		bare = strings.Replace(bare, shown, plain, 1)
	}
	b, err := wire.Read([]byte(bare), d)
	require.NoError(t, err)
	if after > budget {
		require.Greater(t, wire.Tokens(b, nil), budget,
			"budget %d: ends at %d, over, though its lines written bare would fit", budget, after)
		require.False(t, cut, "budget %d: a line cut in a body that stays over", budget)
		return lineNone
	}
	if cut {
		b, err := wire.Read([]byte(whole), d)
		require.NoError(t, err)
		require.Greater(t, wire.Tokens(b, nil), budget, "budget %d: a line cut that fits whole", budget)
	}
	switch {
	case partly:
		followed(t, sp, ps)
		return linePart
	case cut:
		followed(t, sp, ps)
		return lineCut
	case described:
		return lineWhole
	}
	return lineNone
}

// followed checks that every pointer still reads its segment back, by
// key and by a query for a word of its content.
func followed(t *testing.T, sp *spill.Spiller, ps []pruneguard.Pointer) {
	t.Helper()
	for _, p := range ps {
		args, _ := json.Marshal(map[string]string{"key": p.Key})
		answer, err := sp.HandleRecall(t.Context(), args)
		require.NoError(t, err)
		require.Contains(t, answer, p.Key)
	}
	args, _ := json.Marshal(map[string]string{"query": "get_counter_value"})
	answer, err := sp.HandleRecall(t.Context(), args)
	require.NoError(t, err)
	require.Contains(t, answer, "get_counter_value")
}
