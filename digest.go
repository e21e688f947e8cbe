package pruneguard

import (
	"context"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Digest is the built-in [Summarizer]: deterministic, with no model, for
// tests, examples, the command and runtimes that want a cheap first step.
// For each message of the run it writes one line of what happened (the
// role, the tools called with their arguments, the tool answered, the
// start of the text), then the facts the Brief requires, verbatim, then
// as many of the other facts found as fit, and a line for each pointer
// it carries. Secrets withheld from the Brief never reach it.
//
// The zero Digest is ready to use. A Digest is a plain value, safe for
// concurrent use.
type Digest struct {
	// MaxTokens bounds what the summary holds beyond the facts the
	// Brief requires and the pointer lines, counted as [ApproxCounter]
	// counts (a quarter of the bytes). Zero means a quarter of the run's
	// tokens, at least 64.
	MaxTokens int
	// PointerText writes the line for a pointer the summary carries; it
	// must hold the pointer's key. Nil writes where the content is and
	// that a recall with the key reads it back.
	PointerText func(Pointer) string
}

// Digest's bounds on what it quotes of a message.
const (
	digestLine = 160 // the start of a text, in bytes
	digestArgs = 160 // a call's arguments, in bytes
)

// Summarize implements [Summarizer]. It fails only when ctx is done.
func (g Digest) Summarize(ctx context.Context, b *Brief) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var w strings.Builder
	w.WriteString("[Summary of " + strconv.Itoa(len(b.Replace)) + " earlier messages, written to save context: " +
		"not your words nor the user's. Quoted facts are verbatim.]\n")
	for _, m := range b.Messages {
		w.WriteString(digestMessage(m))
	}
	required := map[string]bool{}
	if len(b.Facts) > 0 {
		w.WriteString("Facts to keep:")
		for _, f := range b.Facts {
			if !required[f.Text] {
				required[f.Text] = true
				w.WriteString(" " + f.Text + ";")
			}
		}
		w.WriteString("\n")
	}
	g.writeOthers(&w, b, required)
	for _, p := range b.Pointers {
		w.WriteString(g.pointerText(p) + "\n")
	}
	return w.String(), nil
}

// writeOthers adds the facts of the run that the Brief does not require,
// most important first as the Brief lists them, while they fit.
func (g Digest) writeOthers(w *strings.Builder, b *Brief, written map[string]bool) {
	limit := g.MaxTokens
	if limit <= 0 {
		limit = max(64, b.Tokens/4)
	}
	room := limit*4 - w.Len()
	started := false
	for _, m := range b.Messages {
		for _, f := range m.Facts {
			if written[f.Text] || len(f.Text)+2 > room {
				continue
			}
			if !started {
				w.WriteString("Other facts:")
				started = true
			}
			written[f.Text] = true
			w.WriteString(" " + f.Text + ";")
			room -= len(f.Text) + 2
		}
	}
	if started {
		w.WriteString("\n")
	}
}

func (g Digest) pointerText(p Pointer) string {
	if g.PointerText != nil {
		return g.PointerText(p)
	}
	return "[the messages summarized are stored at " + p.Store + ":" + p.Key + "; recall them with key " + strconv.Quote(p.Key) + "]"
}

// digestMessage writes the line of one message.
func digestMessage(m BriefMessage) string {
	var w strings.Builder
	if m.Role == RoleSummary {
		return "- an earlier summary: its facts are kept below\n"
	}
	w.WriteString("- " + string(m.Role))
	for _, k := range m.Calls {
		w.WriteString(" called " + k.Tool)
		if len(k.Args) > 0 {
			w.WriteString(" " + clip(strings.Join(strings.Fields(string(k.Args)), " "), digestArgs))
		}
	}
	if len(m.Answers) > 0 && len(m.Calls) == 0 {
		w.WriteString(" result of " + strings.Join(m.Tools, ", "))
	}
	if m.IsError {
		w.WriteString(" (error)")
	}
	switch {
	case m.Withheld:
		w.WriteString(": [withheld: a one-time secret]")
	case m.Stubbed:
		w.WriteString(": [content already removed]")
	case len(m.Content) > 0:
		w.WriteString(": " + clip(strings.Join(strings.Fields(string(m.Content)), " "), digestLine))
	}
	w.WriteString("\n")
	return w.String()
}

// clip cuts s to at most n bytes, at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
