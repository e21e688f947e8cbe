package wire

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/pruneguard/pruneguard"
)

// TestSummaryUndo: a summary carried out on the edit state while a check
// runs is taken back whole by the journal, as evictions are: the body
// written, its tokens and the summary's index are those before it.
func TestSummaryUndo(t *testing.T) {
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 40)
	for _, d := range []Dialect{OpenAIChat, Anthropic} {
		body := `{"messages":[{"role":"user","content":"task"},` +
			`{"role":"assistant","content":"an answer with ticket INC-4711 in it. ` + filler + `"},` +
			`{"role":"user","content":"more"},{"role":"assistant","content":"ok"},{"role":"user","content":"next"}]}`
		g, err := Bind([]byte(body), d, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var before bytes.Buffer
		g.WriteTo(&before)
		tokens := g.Tokens()
		b, err := g.ctx.Brief(pruneguard.Plan{Summary: &pruneguard.Summary{Replace: []pruneguard.MessageID{"m1", "m2"}}})
		if err != nil {
			t.Fatal(err)
		}
		text, _ := pruneguard.Digest{}.Summarize(context.Background(), b)
		dec, err := g.ctx.Prune(pruneguard.Plan{Summary: &pruneguard.Summary{Replace: b.Replace, ID: "s1", Text: text}})
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		g.journal = []undo{}
		g.record(dec)
		if _, ok := g.Index("s1"); !ok || g.Tokens() == tokens {
			t.Fatalf("%s: the summary was not carried out", d)
		}
		g.undo()
		g.journal = nil
		var after bytes.Buffer
		g.WriteTo(&after)
		if _, ok := g.Index("s1"); ok || g.Tokens() != tokens || after.String() != before.String() {
			t.Errorf("%s: after undo: s1 indexed %v, tokens %d (want %d)\n%s", d, ok, g.Tokens(), tokens, after.String())
		}
	}
}
