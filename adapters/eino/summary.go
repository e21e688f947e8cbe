package einoguard

import (
	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
)

// Summaries: a guard with a Summarizer replaces a run of whole units with
// one summary message, which the session sends as a user message in the
// run's place.

// configureSummaries gives the Context each message's text, for the facts
// a summary must carry, unless the configuration gives a source; and,
// unless it gives a SummaryCounter, a count of a summary as Config.Tokens
// counts the message it is sent as.
func (s *Session) configureSummaries() {
	if s.cfg.Context.Text == nil {
		s.cfg.Context.Text = pruneguard.TextFunc(s.textOf)
	}
	if s.cfg.Context.SummaryCounter == nil {
		s.cfg.Context.SummaryCounter = summaryCounter(s.cfg.Tokens)
	}
}

// summaryCounter counts a summary's text as the message the session
// sends it as, with Config.Tokens.
type summaryCounter func(*schema.Message) int

// Count implements pruneguard.Counter.
func (f summaryCounter) Count(text []byte) int {
	return f(SummaryMessage(&pruneguard.Summary{Text: string(text)}))
}

// textOf is the text of message id: its content and the text of its
// parts. The Context asks for it while the session's lock is held by the
// pass that runs the guard.
func (s *Session) textOf(id pruneguard.MessageID) []byte {
	i, ok := s.find(id)
	if !ok {
		return nil
	}
	return []byte(textOf(s.orig(i)))
}

// SummaryMessage is the message a summary is sent as: a user message
// holding its text.
func SummaryMessage(sum *pruneguard.Summary) *schema.Message {
	return schema.UserMessage(sum.Text)
}

// summarySlot returns the slot of the first message of decision d's
// run when d is a summary, or -1.
func (s *Session) summarySlot(d *pruneguard.Decision) int {
	if d.Summary == nil || len(d.Evict) == 0 {
		return -1
	}
	if i, ok := s.find(d.Evict[0]); ok {
		return i
	}
	return -1
}

// placeSummary puts the summary of decision d in slot i, that of the
// first message of its run, which apply has just evicted.
func (s *Session) placeSummary(d *pruneguard.Decision, i int) {
	if i < 0 || s.shown[i] != nil {
		return
	}
	m := SummaryMessage(d.Summary)
	tok := s.cfg.Tokens(m)
	n := s.live[i].seq
	s.shown[i] = m
	s.live[i] = slot{seq: n, hash: hashMessage(s.seed, m), tok: tok, sum: true}
	if s.sums == nil {
		s.sums = make(map[pruneguard.MessageID]uint64)
	}
	s.sums[d.Summary.ID] = n
	s.sent += tok
}
