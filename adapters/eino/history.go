package einoguard

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/cloudwego/eino/schema"
)

// Recognising a history. eino hands a hook the same conversation in
// several shapes: the whole history (a MessageModifier), the session's
// own last answer with new messages appended (a MessageRewriter, an adk
// middleware), and, at the start of each adk Run, copies of the messages
// it had. A list is taken to continue what the session holds when every
// message of one of two lists is equal, in order, to the list's first
// messages: the messages taken in so far, evicted ones included, or the
// list last sent. Equal means the same pointer or, for a copy, the same
// content hash; a copy recognised takes the place of the message it
// equals, so the next pass finds it by pointer.

// hashMessage hashes what the model reads of m: its role, content,
// reasoning, name, multimodal parts, tool calls (id, type, name and
// arguments, and their Extra), the call it answers and the tool name,
// and its Extra. ResponseMeta and a call's Index (stream bookkeeping) are
// left out. Parts or an Extra that cannot be written as JSON make a hash
// that no other message shares.
func hashMessage(seed maphash.Seed, m *schema.Message) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var n [8]byte
	num := func(v int) {
		binary.LittleEndian.PutUint64(n[:], uint64(v))
		h.Write(n[:])
	}
	str := func(s string) {
		num(len(s))
		h.WriteString(s)
	}
	opaque := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			str(fmt.Sprintf("%p", m))
		}
		str(string(b))
	}
	str(string(m.Role))
	str(m.Content)
	str(m.ReasoningContent)
	str(m.Name)
	str(m.ToolCallID)
	str(m.ToolName)
	num(len(m.ToolCalls))
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		str(tc.ID)
		str(tc.Type)
		str(tc.Function.Name)
		str(tc.Function.Arguments)
		if len(tc.Extra) > 0 {
			opaque(tc.Extra)
		}
	}
	num(len(m.MultiContent) + len(m.UserInputMultiContent) + len(m.AssistantGenMultiContent) + len(m.Extra))
	if len(m.MultiContent)+len(m.UserInputMultiContent)+len(m.AssistantGenMultiContent) > 0 {
		opaque([]any{m.MultiContent, m.UserInputMultiContent, m.AssistantGenMultiContent})
	}
	if len(m.Extra) > 0 {
		opaque(m.Extra)
	}
	return h.Sum64()
}

// same reports whether m is the message of hash h: p itself, or a
// message with its content.
func (s *Session) same(m, p *schema.Message, h uint64) bool {
	return m == p || (m != nil && hashMessage(s.seed, m) == h)
}

// match returns the messages of msgs new to the session, and false when
// msgs continues neither the messages taken in nor the list last sent.
func (s *Session) match(msgs []*schema.Message) ([]*schema.Message, bool) {
	switch {
	case s.broken:
		return nil, false
	case len(s.hist) == 0:
		return msgs, true
	case s.matchHist(msgs):
		return msgs[len(s.hist):], true
	case s.matchSent(msgs):
		return msgs[s.sentLen():], true
	}
	return nil, false
}

// matchHist reports whether msgs starts with the messages taken in, and
// then records the copies among them in their place.
func (s *Session) matchHist(msgs []*schema.Message) bool {
	if len(msgs) < len(s.hist) {
		return false
	}
	var copied []int
	for i := 0; i < len(s.hist); i++ {
		m := s.hist[i]
		if msgs[i] == m {
			continue
		}
		if s.same(msgs[i], m, s.histHash[i]) {
			copied = append(copied, i)
			continue
		}
		j, ok := s.reordered(msgs, i)
		if !ok {
			return false
		}
		i = j - 1
	}
	for _, i := range copied {
		old := s.hist[i]
		s.hist[i] = msgs[i]
		s.copied(uint64(i)+1, old, msgs[i])
	}
	return true
}

// reordered reports whether the tool results taken in from number i+1
// on, up to the next message that is not one, are those of msgs from
// index i on in another order, as eino's parallel tools may hand them
// back, and returns the index after them. The session keeps its own
// order: the results answer calls by id.
func (s *Session) reordered(msgs []*schema.Message, i int) (int, bool) {
	j := i
	for j < len(s.hist) && s.hist[j].Role == schema.Tool {
		j++
	}
	if j-i < 2 {
		return 0, false
	}
	want := slices.Clone(s.histHash[i:j])
	got := make([]uint64, 0, j-i)
	for _, m := range msgs[i:j] {
		if m == nil || m.Role != schema.Tool {
			return 0, false
		}
		got = append(got, hashMessage(s.seed, m))
	}
	slices.Sort(want)
	slices.Sort(got)
	return j, slices.Equal(want, got)
}

// copied puts m, a copy of old, the message taken in as number seq, in
// its place in the view when the view shows it as it was given.
func (s *Session) copied(seq uint64, old, m *schema.Message) {
	if i, ok := s.findSeq(seq); ok && !s.live[i].sum && s.shown[i] == old {
		s.shown[i] = m
	}
}

// sentLen is the length of the list last sent.
func (s *Session) sentLen() int {
	if s.note != nil {
		return len(s.shown) + 1
	}
	return len(s.shown)
}

// sentAt returns the index in the view of position i of the list last
// sent, or -1 for the note.
func (s *Session) sentAt(i int) int {
	if s.note != nil {
		switch {
		case i == s.lead:
			return -1
		case i > s.lead:
			i--
		}
	}
	return i
}

// matchSent reports whether msgs starts with the list last sent, and
// then records the copies among them in their place.
func (s *Session) matchSent(msgs []*schema.Message) bool {
	n := s.sentLen()
	if len(msgs) < n {
		return false
	}
	copied := 0
	for i := range n {
		k := s.sentAt(i)
		switch {
		case k < 0:
			if !s.same(msgs[i], s.note, s.noteHash) {
				return false
			}
		case msgs[i] != s.shown[k]:
			if !s.same(msgs[i], s.shown[k], s.live[k].hash) {
				return false
			}
			copied++
		}
	}
	for i := 0; copied > 0 && i < n; i++ {
		if k := s.sentAt(i); k >= 0 && msgs[i] != s.shown[k] {
			if sl := &s.live[k]; !sl.sum && s.shown[k] == s.hist[sl.seq-1] {
				s.hist[sl.seq-1] = msgs[i]
			}
			s.shown[k] = msgs[i]
			copied--
		}
	}
	return true
}
