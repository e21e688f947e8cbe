package wire

import (
	"context"
	"log/slog"
	"slices"
	"strconv"

	"github.com/pruneguard/pruneguard"
)

// Pointer lines that fold: every prune that spills and evicts adds a
// pointer line to the system prompt, and the lines would grow with the
// length of the conversation until they fill the prompt. When a
// session's lines cost more than a share of its budget, it spills the
// lines themselves, as one segment of one message per line, and shows
// one line pointing to that segment in their place: recalling it gives
// the lines back, each with its key, and a recall query searches every
// segment all the same.

// lineFoldShare is the share of the budget the pointer lines of a
// session may cost before they fold (1/8).
const lineFoldShare = 8

// lineFold is one fold: the pointer of the segment holding the lines,
// and the pointers whose lines it holds.
type lineFold struct {
	ptr    pruneguard.Pointer
	covers map[pruneguard.Pointer]bool
}

// pointerLines returns the pointer lines of the spilled messages in
// notes, as the prompt shows them: the line of each fold, then one line
// per pointer no fold holds.
func (s *Session) pointerLines(notes []pruneguard.SpillNote) []string {
	return pointerTexts(s.linePointers(notes), lineText(s.cfg.Spiller, s.short))
}

// linePointers returns the pointers of the lines of the spilled
// messages in notes, as the prompt shows them: the last fold's, then
// one per pointer no fold holds.
func (s *Session) linePointers(notes []pruneguard.SpillNote) []pruneguard.Pointer {
	if len(s.folds) == 0 {
		return linePointers(notes)
	}
	covered := s.folds[len(s.folds)-1].covers
	rest := make([]pruneguard.SpillNote, 0, len(notes))
	for _, n := range notes {
		if !covered[n.Pointer] {
			rest = append(rest, n)
		}
	}
	return append([]pruneguard.Pointer{s.folds[len(s.folds)-1].ptr}, linePointers(rest)...)
}

// fitLines writes the pointer lines the check added shorter when that
// alone brings the body within budget (see lines_fit.go): those of no
// note of notes and no fold of the first folded, the lines before the
// check. The journal keeps the text of each line it cuts.
func (s *Session) fitLines(notes []pruneguard.SpillNote, folded, budget int) {
	if s.cfg.Spiller == nil || budget <= 0 || len(s.spilled) == len(notes) && len(s.folds) == folded || !s.linePlace() {
		return
	}
	before := linePointers(notes)
	for _, f := range s.folds[:folded] {
		before = append(before, f.ptr)
	}
	var added []pruneguard.Pointer
	for _, p := range s.linePointers(s.spilled) {
		if !slices.Contains(before, p) {
			added = append(added, p)
		}
	}
	if s.short == nil {
		s.short = shortLines{}
	}
	cuts := fitLines(s.cfg.Spiller, added, s.short, func() int {
		s.topChanged()
		return s.bodyTokens() - budget
	})
	for _, p := range cuts {
		s.cutLine(p, s.short[p])
	}
}

// cutLine records that the line of p is written as text (see fitLines).
// The journal keeps it.
func (s *Session) cutLine(p pruneguard.Pointer, text string) {
	s.journal(jop{Op: jLine, Pointer: &jpointer{Store: p.Store, Key: p.Key}, Raw: []byte(text)})
	if s.short == nil {
		s.short = shortLines{}
	}
	s.short[p] = text
	s.topChanged()
}

// fold records that the segment p holds the pointer lines that stand:
// its line stands for them from now on. The journal keeps it.
func (s *Session) fold(p pruneguard.Pointer) {
	s.journal(jop{Op: jFold, Pointer: &jpointer{Store: p.Store, Key: p.Key}})
	covers := map[pruneguard.Pointer]bool{}
	for _, note := range s.spilled {
		covers[note.Pointer] = true
	}
	s.folds = append(s.folds, lineFold{ptr: p, covers: covers})
	s.topChanged()
}

// foldLines folds the pointer lines when they cost more than their share
// of the budget: the lines the prompt shows (a fold's line among them)
// are spilled as one segment, whose line then stands for all of them. A
// spill that fails leaves the lines as they are, and is logged.
func (s *Session) foldLines(ctx context.Context) {
	if s.cfg.Spiller == nil || !s.linePlace() || s.pointerLineTokens() <= s.cfg.Guard.Budget/lineFoldShare {
		return
	}
	lines := s.pointerLines(s.spilled)
	if len(lines) < 2 {
		return
	}
	ms := make([]pruneguard.Message, len(lines))
	n := strconv.Itoa(len(s.folds))
	for i, l := range lines {
		ms[i] = pruneguard.Message{ID: pruneguard.MessageID("pointers-" + n + "-" + strconv.Itoa(i)), Role: pruneguard.RoleSystem,
			Content: []byte(l), Tokens: countJSON(s.count, mustString(l))}
	}
	p, err := s.cfg.Spiller.SpillMessages(ctx, ms)
	if err == nil && !s.cfg.Spiller.Resolvable(p) {
		err = pruneguard.ErrUnresolvedSpill
	}
	if err != nil {
		if s.log != nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, pruneguard.LogSpillFailed, slog.String("dialect", string(s.cfg.Dialect)),
				slog.String("of", "pointer lines"), slog.Int("lines", len(lines)), slog.String("error", err.Error()))
		}
		return
	}
	s.fold(p)
	if s.log != nil {
		s.log.LogAttrs(ctx, slog.LevelInfo, pruneguard.LogSpill, slog.String("dialect", string(s.cfg.Dialect)),
			slog.String("of", "pointer lines"), slog.Int("lines", len(lines)), slog.String("store", p.Store), slog.String("key", p.Key))
	}
}
