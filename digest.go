package pruneguard

import (
	"context"
	"slices"
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
	digestLine = 120 // the start of a text, in bytes
	digestArgs = 100 // a call's arguments, in bytes
)

// Summarize implements [Summarizer]. It fails only when ctx is done.
//
// The facts the Brief requires and the pointer lines are always written;
// within MaxTokens, the other facts come next, then the lines of the
// messages, oldest first, and a count of the lines left out.
func (g Digest) Summarize(ctx context.Context, b *Brief) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	header := "[Summary of " + strconv.Itoa(len(b.Replace)) + " earlier messages, written to save context: " +
		"not your words nor the user's. Facts are quoted verbatim.]\n"
	written := map[string]bool{}
	required := factLine("Facts to keep:", b.Facts, written, -1)
	var pointers strings.Builder
	for _, p := range b.Pointers {
		pointers.WriteString(g.pointerText(p) + "\n")
	}
	room := g.limit(b)*4 - len(header) - len(required) - pointers.Len()
	other := factLine("Other facts:", otherFacts(b), written, room)
	room -= len(other)
	var lines strings.Builder
	for i, m := range b.Messages {
		line := digestMessage(m)
		if len(line) > room {
			lines.WriteString("- … and " + strconv.Itoa(len(b.Messages)-i) + " more messages\n")
			break
		}
		lines.WriteString(line)
		room -= len(line)
	}
	return header + lines.String() + required + other + pointers.String(), nil
}

// otherFacts lists the facts of a run's messages in the order a summary
// keeps them when its bound cuts the list: those the user gave, then the
// model's own, then the tools', each in transcript order, and last those
// an earlier summary carried, the newest first (its run was spilled:
// what it carried can be read back).
func otherFacts(b *Brief) []Fact {
	rank := func(r Role) int {
		switch r {
		case RoleUser:
			return 0
		case RoleAssistant, RoleReasoning:
			return 1
		case RoleSummary:
			return 3
		}
		return 2
	}
	var groups [4][]Fact
	for _, m := range b.Messages {
		k := rank(m.Role)
		groups[k] = append(groups[k], m.Facts...)
	}
	slices.Reverse(groups[3])
	return slices.Concat(groups[:]...)
}

// limit returns the bound of what a summary of b holds beyond what it
// must, in tokens.
func (g Digest) limit(b *Brief) int {
	if g.MaxTokens > 0 {
		return g.MaxTokens
	}
	return max(64, b.Tokens/4)
}

// factLine writes the facts not yet written, after title, on one line,
// while they fit in room bytes (all of them for a negative room), and
// records them as written. It writes nothing when no fact is new.
func factLine(title string, fs []Fact, written map[string]bool, room int) string {
	var w strings.Builder
	for _, f := range fs {
		if written[f.Text] {
			continue
		}
		if w.Len() == 0 {
			w.WriteString(title)
		}
		if room >= 0 && w.Len()+len(f.Text)+3 > room {
			break
		}
		written[f.Text] = true
		w.WriteString(" " + f.Text + ";")
	}
	if w.Len() <= len(title) {
		return ""
	}
	w.WriteString("\n")
	return w.String()
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
