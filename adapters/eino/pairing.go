package einoguard

import (
	"strconv"

	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
)

// waiting is a call of the last assistant turn still waiting for its
// result: its id in the Context and the id eino gave it.
type waiting struct {
	call pruneguard.CallID
	eino string
}

// pair readies event e of message m for the Context as eino's message
// lists pair calls with results (the Chat format): the results of an
// assistant turn's calls are the tool messages right after it.
//
//   - A message other than a tool message ends the turn: the calls still
//     waiting are abandoned, as no result can come for them, so that they
//     do not hold up every later prune as pending calls.
//   - A call without an id, or with an id used before in its message,
//     gets one made from the message's id and its index.
//   - A tool message answers the first call waiting with its ToolCallID
//     (without one, the first call without one). One that answers no call
//     waiting (its call is not in the list, or was answered) answers
//     nothing and is kept as the result of a tool nobody described:
//     irreducible.
func (s *Session) pair(m *schema.Message, e *pruneguard.Message) error {
	if m.Role != schema.Tool && len(s.wait) > 0 {
		ids := make([]pruneguard.CallID, len(s.wait))
		for i, w := range s.wait {
			ids[i] = w.call
		}
		if err := s.c.Abandon(ids...); err != nil {
			return err
		}
		s.wait = s.wait[:0]
	}
	if m.Role == schema.Tool {
		e.Answers = nil
		for k, w := range s.wait {
			if w.eino == m.ToolCallID {
				e.Answers = []pruneguard.CallID{w.call}
				s.wait = append(s.wait[:k], s.wait[k+1:]...)
				break
			}
		}
		if len(e.Answers) == 0 {
			e.Class = pruneguard.Irreducible
		}
	}
	for i := range e.Calls {
		given := m.ToolCalls[i].ID
		if given == "" || s.waits(given) {
			e.Calls[i].ID = pruneguard.CallID(string(e.ID) + "." + strconv.Itoa(i))
		}
		s.wait = append(s.wait, waiting{call: e.Calls[i].ID, eino: given})
	}
	return nil
}

// waits reports whether a call eino gave id is waiting.
func (s *Session) waits(id string) bool {
	for _, w := range s.wait {
		if w.eino == id {
			return true
		}
	}
	return false
}
