package wire

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// Index returns the index of message id in the history the runtime fed
// the session (in the body it synced), from 0, evicted messages included:
// the position [Refusal].Indexes gives. ok is false for an id the session
// never held. The session's ids are the provider's where it has them and
// positional otherwise ("m" and the position, with a suffix when another
// message took that id), so that an id in a report, a log record or an
// error is matched to the runtime's turns by its index, whatever it is.
func (s *Session) Index(id pruneguard.MessageID) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byID[id]; e != nil {
		return e.pos, true
	}
	return 0, false
}

// HistoryError is an error of a [Session] whose text names messages of
// the history by their ids (a *pruneguard.CeilingError naming the units
// that stood in the way, the calls and messages in flight): it gives the
// index of each in the history the runtime fed, as [Session.Index] does.
// errors.Is and errors.As see Err, the error it adds them to, as before.
//
// The zero HistoryError wraps no error; a session returns it filled in.
type HistoryError struct {
	Err error
	// Messages are the messages Err names (a call by the message making
	// it, a unit by its first message), in the order named, each once,
	// and Indexes their indexes in the history.
	Messages []pruneguard.MessageID
	Indexes  []int
}

// Error returns Err's text followed by the index of each message it
// names.
func (e *HistoryError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	b.WriteString(" (indexes in the history:")
	for i, id := range e.Messages {
		b.WriteString(" ")
		b.WriteString(string(id))
		b.WriteString("=")
		b.WriteString(strconv.Itoa(e.Indexes[i]))
	}
	b.WriteString(")")
	return b.String()
}

// Unwrap returns Err.
func (e *HistoryError) Unwrap() error { return e.Err }

// indexed returns err as a *HistoryError when it names messages of the
// history, and as it is otherwise.
func (s *Session) indexed(err error) error {
	if err == nil {
		return nil
	}
	h := &HistoryError{Err: err}
	add := func(id pruneguard.MessageID) {
		if e := s.byID[id]; e != nil && !slices.Contains(h.Messages, id) {
			h.Messages = append(h.Messages, id)
			h.Indexes = append(h.Indexes, e.pos)
		}
	}
	call := func(c pruneguard.CallID) {
		if id, ok := s.callBy[c]; ok {
			add(id)
		}
	}
	var de *pruneguard.DeferredError
	if errors.As(err, &de) {
		for _, c := range de.Pending {
			call(c)
		}
		for _, id := range de.Open {
			add(id)
		}
		for _, u := range de.Units {
			add(pruneguard.MessageID(u))
		}
	}
	var pe *pruneguard.PruneError
	if errors.As(err, &pe) {
		for _, v := range pe.Violations {
			for _, u := range v.Units {
				add(pruneguard.MessageID(u))
			}
			for _, id := range v.Messages {
				add(id)
			}
			for _, c := range v.Calls {
				call(c)
			}
		}
	}
	if len(h.Messages) == 0 {
		return err
	}
	return h
}
