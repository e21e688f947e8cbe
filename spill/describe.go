package spill

import (
	"slices"
	"strconv"
	"strings"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/internal/facts"
)

// MaxDescriptionLen bounds the description of a segment that
// [Spiller.PointerText] shows, in bytes. A description is printable
// ASCII, so it is at most that many characters too.
const MaxDescriptionLen = 120

// The parts of a description that are bounded on their own, so that the
// facts always get a share of it.
const (
	maxDescribedIDLen   = 24 // a longer message id is not shown
	maxDescribedTools   = 4  // tools named; more are counted
	maxDescribedFactLen = 40 // a longer fact is not shown
)

// describeKinds are the kinds of facts a description shows, most useful
// first for a model choosing what to recall: what names a thing, then
// what measures it; sentences are too long to help.
var describeKinds = []facts.Kind{facts.KindID, facts.KindPath, facts.KindURL, facts.KindEmail,
	facts.KindNumber, facts.KindTime, facts.KindKV, facts.KindQuoted}

// structuralKeys name JSON fields of provider messages whose values are
// plumbing (call ids, roles), not facts a model would recall by.
var structuralKeys = map[string]bool{
	"id": true, "call_id": true, "tool_call_id": true, "tool_use_id": true, "toolUseId": true, "toolCallId": true,
	"role": true, "type": true,
}

// describe returns a short description of the messages of a segment: how
// many, their ids, the tools they call, how many report an error, and a
// few of their facts, at most MaxDescriptionLen bytes of printable ASCII
// that holds none of the bytes shown only by [describable]. It is
// deterministic. Facts of a message marked with a one-time secret are not
// shown.
func describe(ms []pruneguard.Message) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(len(ms)))
	if len(ms) == 1 {
		b.WriteString(" message")
	} else {
		b.WriteString(" messages")
	}
	first, last := string(ms[0].ID), string(ms[len(ms)-1].ID)
	if describable(first, maxDescribedIDLen) && describable(last, maxDescribedIDLen) {
		b.WriteString(" " + first)
		switch {
		case len(ms) == 2:
			b.WriteString(", " + last)
		case len(ms) > 2:
			b.WriteString(".." + last)
		}
	}
	if n := errorCount(ms); n > 0 {
		b.WriteString("; errors: " + strconv.Itoa(n))
	}
	addTools(&b, ms)
	addFacts(&b, ms)
	return b.String()
}

// addTools appends "; tools: " and the distinct tools the messages call,
// in order, as many as fit, and "+N" for the others when it fits.
func addTools(b *strings.Builder, ms []pruneguard.Message) {
	var tools []string
	for _, m := range ms {
		for _, c := range m.Calls {
			if describable(c.Tool, maxDescribedIDLen) && !slices.Contains(tools, c.Tool) {
				tools = append(tools, c.Tool)
			}
		}
	}
	shown := 0
	for _, t := range tools {
		sep := ", "
		if shown == 0 {
			sep = "; tools: "
		}
		if shown == maxDescribedTools || b.Len()+len(sep)+len(t) > MaxDescriptionLen {
			break
		}
		b.WriteString(sep + t)
		shown++
	}
	if n := " +" + strconv.Itoa(len(tools)-shown); shown > 0 && shown < len(tools) && b.Len()+len(n) <= MaxDescriptionLen {
		b.WriteString(n)
	}
}

func errorCount(ms []pruneguard.Message) int {
	n := 0
	for _, m := range ms {
		if m.IsError {
			n++
		}
	}
	return n
}

// addFacts appends "; facts: " and the facts of ms that fit in
// MaxDescriptionLen, by kind (describeKinds) and then in order.
func addFacts(b *strings.Builder, ms []pruneguard.Message) {
	found := messageFacts(ms)
	shown := 0
	for _, kind := range describeKinds {
		for _, f := range found {
			if f.Kind != kind {
				continue
			}
			sep := ", "
			if shown == 0 {
				sep = "; facts: "
			}
			if b.Len()+len(sep)+len(f.Text) > MaxDescriptionLen {
				continue
			}
			b.WriteString(sep + f.Text)
			shown++
		}
	}
}

// messageFacts returns the facts of the content and call arguments of
// ms, each once, in order, without those a description cannot show and
// those of structural fields or naming the segment's own ids.
func messageFacts(ms []pruneguard.Message) []facts.Fact {
	ids := map[string]bool{}
	for _, m := range ms {
		ids[string(m.ID)] = true
		for _, c := range m.Calls {
			ids[string(c.ID)] = true
		}
		for _, a := range m.Answers {
			ids[string(a)] = true
		}
	}
	var out []facts.Fact
	seen := map[string]bool{}
	add := func(text []byte) {
		for _, f := range facts.Extract(string(text)) {
			if seen[f.Text] || ids[f.Text] || structuralKeys[f.Key] || !describable(f.Text, maxDescribedFactLen) {
				continue
			}
			seen[f.Text] = true
			out = append(out, f)
		}
	}
	for _, m := range ms {
		if m.Facts&pruneguard.OneTimeSecret != 0 {
			continue
		}
		add(m.Content)
		for _, c := range m.Calls {
			add(c.Args)
		}
	}
	return out
}

// describable reports whether s may stand in a description: 1 to max
// bytes of printable ASCII without the bytes that delimit a pointer's
// text or a description's parts ("[]();, and backslash).
func describable(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || strings.IndexByte("\"\\[]();,", c) >= 0 {
			return false
		}
	}
	return true
}

// validDescription reports whether a description read from a store is
// one describe could have written: no longer than MaxDescriptionLen, and
// printable ASCII without '"', '\\', '[' or ']'.
func validDescription(s string) bool {
	if len(s) > MaxDescriptionLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || strings.IndexByte("\"\\[]", c) >= 0 {
			return false
		}
	}
	return true
}
