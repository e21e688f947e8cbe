package einoguard

import (
	"slices"
	"strings"

	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
)

// The model's view: the guard's decisions carried out on the list the
// session sends, and the note.

// apply mirrors applied decisions in the view and notes in the pass
// what they took: stubs carry the stub text, or their pointer's text
// when their content was spilled; evicted messages leave, a line with
// the pointer of those spilled staying in the note, unless a summary
// takes the place of their run and carries it.
func (s *Session) apply(ds []*pruneguard.Decision) {
	cut := -1 // the first slot evicted
	for _, d := range ds {
		var ptr map[pruneguard.MessageID]pruneguard.Pointer
		if len(d.Pointers) > 0 {
			ptr = make(map[pruneguard.MessageID]pruneguard.Pointer, len(d.Pointers))
			for _, n := range d.Pointers {
				ptr[n.Message] = n.Pointer
			}
		}
		for _, id := range d.Stub {
			i, ok := s.find(id)
			if !ok {
				continue
			}
			text := s.stub
			if p, ok := ptr[id]; ok {
				text = s.pointerText(p)
			}
			s.restub(i, text)
			s.stubbed = append(s.stubbed, seqMsg{s.live[i].seq, s.orig(i)})
		}
		at := s.summarySlot(d)
		for _, id := range d.Evict {
			i, ok := s.find(id)
			if !ok || s.shown[i] == nil {
				continue
			}
			sl := &s.live[i]
			s.evicted = append(s.evicted, seqMsg{sl.seq, s.orig(i)})
			if p, ok := ptr[id]; ok && d.Summary == nil { // a summary carries its pointers
				s.addLine(p)
			}
			if sl.sum {
				delete(s.sums, id)
			}
			s.sent -= sl.tok
			s.shown[i] = nil
			if cut < 0 || i < cut {
				cut = i
			}
		}
		s.placeSummary(d, at)
		s.tombstones(d)
	}
	for t := range s.tombs {
		if st, ok := s.c.Tool(t); !ok || !st.Tombstoned {
			delete(s.tombs, t)
			s.dropNote()
		}
	}
	if cut >= 0 {
		s.compact(cut)
	}
	s.fixNote()
}

// compact drops the messages of the view evicted, from index cut on.
func (s *Session) compact(cut int) {
	j := cut
	for i := cut; i < len(s.shown); i++ {
		if s.shown[i] != nil {
			s.shown[j], s.live[j] = s.shown[i], s.live[i]
			j++
		}
	}
	clear(s.shown[j:])
	clear(s.live[j:])
	s.shown, s.live = s.shown[:j], s.live[:j]
}

// restub sends slot i's message as the runtime gave it with its content
// replaced by text.
func (s *Session) restub(i int, text string) {
	sl := &s.live[i]
	m := Stub(s.orig(i), text)
	tok := s.cfg.Tokens(m)
	s.sent += tok - sl.tok
	s.shown[i], sl.tok, sl.hash = m, tok, hashMessage(s.seed, m)
}

// tombstones records the tombstones decision d adds and retires.
func (s *Session) tombstones(d *pruneguard.Decision) {
	for _, t := range d.Tombstones {
		if s.tombs == nil {
			s.tombs = make(map[string]string)
		}
		s.tombs[t.Tool] = t.Text
		s.dropNote()
	}
	for _, t := range d.Retire {
		delete(s.tombs, t)
		s.dropNote()
	}
}

// addLine adds the line of pointer p to the note, once.
func (s *Session) addLine(p pruneguard.Pointer) {
	if p.IsZero() || slices.Contains(s.lines, p) {
		return
	}
	s.lines = append(s.lines, p)
	s.dropNote()
}

// dropNote forgets the note as written, for fixNote to write it again.
func (s *Session) dropNote() {
	if s.note != nil {
		s.sent -= s.noteTok
		s.note, s.noteTok = nil, 0
	}
}

// fixNote counts the view's leading system messages and writes the note
// when it has lines and is not written, or not in the role its place
// takes: a system message after the leading system messages, or a user
// message first when there are none.
func (s *Session) fixNote() {
	lead := 0
	for lead < len(s.shown) && s.shown[lead].Role == schema.System {
		lead++
	}
	s.lead = lead
	role := schema.System
	if lead == 0 {
		role = schema.User
	}
	if s.note != nil && s.note.Role != role {
		s.dropNote()
	}
	if s.note != nil || (len(s.tombs) == 0 && len(s.lines) == 0) {
		return
	}
	s.note = &schema.Message{Role: role, Content: s.noteText()}
	s.noteHash = hashMessage(s.seed, s.note)
	s.noteTok = s.cfg.Tokens(s.note)
	s.sent += s.noteTok
}

// noteText is the tombstones, one line each sorted by tool, then the
// pointer lines in the order their content left.
func (s *Session) noteText() string {
	names := make([]string, 0, len(s.tombs))
	for t := range s.tombs {
		names = append(names, t)
	}
	slices.Sort(names)
	lines := make([]string, 0, len(names)+len(s.lines))
	for _, t := range names {
		lines = append(lines, s.tombs[t])
	}
	for _, p := range s.lines {
		lines = append(lines, s.pointerText(p))
	}
	return strings.Join(lines, "\n")
}

// view builds the list to send.
func (s *Session) view() []*schema.Message {
	out := make([]*schema.Message, 0, s.sentLen())
	out = append(out, s.shown[:s.lead]...)
	if s.note != nil {
		out = append(out, s.note)
	}
	return append(out, s.shown[s.lead:]...)
}
