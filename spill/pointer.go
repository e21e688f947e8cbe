package spill

import (
	"strconv"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// PointerText is the placeholder that stands in the prompt for content
// spilled behind p. It says what holds for that content: where it is and
// how to read it back with the [RecallTool]. Use it, never a "call the tool
// again" stub, for spilled content. [Spiller.PointerText] adds what the
// segment holds.
func PointerText(p pruneguard.Pointer) string { return pointerText(p, "") }

func pointerText(p pruneguard.Pointer, desc string) string {
	var b strings.Builder
	b.Grow(80 + 2*len(p.Key) + len(p.Store) + len(desc))
	b.WriteString("[content moved to " + p.Store + ":" + p.Key + " to save context")
	if desc != "" {
		b.WriteString(" (" + desc + ")")
	}
	b.WriteString("; call " + RecallToolName + " with key " + strconv.Quote(p.Key) + " to read it back]")
	return b.String()
}

// PointerText is [PointerText] with a short description of what the
// segment holds, between parentheses after the key, so that a model can
// choose what to recall: how many messages and the ids of the first and
// last, how many report an error, the tools they call, and a few of
// their facts (ids, paths, URLs, numbers; none of a message marked with
// a one-time secret). For example:
//
//	[content moved to spill:seg-4f0c…_9a1e… to save context (2 messages a1, r1; tools: create_ticket; facts: INC-4711); call recall with key "seg-4f0c…_9a1e…" to read it back]
//
// The description is at most [MaxDescriptionLen] bytes of printable
// ASCII, and is the same in every process: it is stored in the segment's
// header. The Spiller shows it for the segments it wrote or verified;
// for any other pointer (one it does not know yet, one of another store
// or namespace, or a segment an earlier version wrote, which has none) it
// returns the plain [PointerText]. Once shown, a pointer's text does not
// change, even when the pointer stops resolving.
//
// With NoDescriptions set it returns the plain [PointerText].
//
// Every text it returns for a key of the form the Spiller writes is at
// most len([Spiller.LongestPointerText]()) bytes; a pointer of another
// form (one a Spiller with no Namespace verified) may be longer by its
// key's extra length, twice.
func (s *Spiller) PointerText(p pruneguard.Pointer) string {
	if !s.ready() || s.NoDescriptions || p.Store != s.name() || !s.owns(p.Key) {
		return PointerText(p)
	}
	e, _ := s.known(p.Key)
	return pointerText(p, e.desc)
}

// PointerTextUpTo is [Spiller.PointerText] with the description cut
// to at most n bytes: whole parts of it (the count and ids, the errors,
// each tool, each fact) from its start, as many as fit. With no part
// fitting, or n zero or less, it is the plain [PointerText]: the key and
// the recall instruction, which every form keeps, so that the pointer
// is followed the same way. It is deterministic: the same pointer and n
// give the same text in every process.
func (s *Spiller) PointerTextUpTo(p pruneguard.Pointer, n int) string {
	if !s.ready() || s.NoDescriptions || p.Store != s.name() || !s.owns(p.Key) {
		return PointerText(p)
	}
	e, _ := s.known(p.Key)
	return pointerText(p, cutDescription(e.desc, n))
}

// cutDescription returns the longest start of desc of at most n bytes
// that ends where a part of it ends (before a ", " or a "; "), or all of
// desc when it fits; "" when no part fits.
func cutDescription(desc string, n int) string {
	if len(desc) <= n {
		return desc
	}
	cut := 0
	for i := 1; i+1 < len(desc) && i <= n; i++ {
		if (desc[i] == ',' || desc[i] == ';') && desc[i+1] == ' ' {
			cut = i
		}
	}
	return desc[:cut]
}

// sampleDescription is a description of MaxDescriptionLen bytes, as
// describe writes them.
var sampleDescription = func() string {
	d := "14 messages a1042..r1077; errors: 3; tools: read_file, run_tests, apply_patch +2; " +
		"facts: INC-4711, src/ledger/settle.go:212, 8JVP2Q, exit 137, 2024-05-15T15:00:00Z, 12.50 USD, db.internal:5432"
	return d[:MaxDescriptionLen]
}()

// LongestPointerText returns a text as long as the longest that
// [Spiller.PointerText] returns for a key of this Spiller's form: a
// pointer with the Spiller's name and the longest key of its namespace,
// and a description of [MaxDescriptionLen] bytes written as describe
// writes them. Count it with the runtime's tokenizer to set the cost of a
// pointer line (pruneguard.Config.PointerTokens); a tokenizer that never
// makes a token of less than one byte counts no pointer text as more
// tokens than len(LongestPointerText()).
func (s *Spiller) LongestPointerText() string {
	if s == nil {
		s = &Spiller{}
	}
	key := s.keyPrefix() + strings.Repeat("0", keyHashLen)
	desc := sampleDescription
	if s.NoDescriptions {
		desc = ""
	}
	return pointerText(pruneguard.Pointer{Store: s.name(), Key: key}, desc)
}
