package einoguard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"slices"

	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
)

// ErrBadState is returned by [Session.Restore] for state that
// [Session.Save] did not write, or that was truncated or altered since,
// or that does not hold together. It comes wrapped in a *[StateError]
// naming the part at fault; when the part is the core Context's state,
// the error matches pruneguard.ErrBadState too.
var ErrBadState = errors.New("einoguard: bad saved state")

// StateError reports saved state [Session.Restore] refused. It matches
// [ErrBadState] and its Err with errors.Is.
type StateError struct {
	Part string // the part of the state at fault: "sha256", "json", "history", "view", "context", ...
	Err  error  // what was wrong, when there is more to say; may be nil
}

// Error returns the error's text.
func (e *StateError) Error() string {
	if e.Err == nil {
		return "einoguard: bad saved state: " + e.Part
	}
	return "einoguard: bad saved state: " + e.Part + ": " + e.Err.Error()
}

// Unwrap returns ErrBadState and Err.
func (e *StateError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrBadState}
	}
	return []error{ErrBadState, e.Err}
}

func badState(part string, err error) error { return &StateError{Part: part, Err: err} }

// The saved form of a Session: JSON, format "pruneguard.eino" version 1,
// ending with the SHA-256 of the rest (as the core's state does).
const (
	sessionFormat  = "pruneguard.eino"
	sessionVersion = 1
	sealKey        = `,"sha256":"`
)

// savedSession is a session's state: the core Context's own saved
// state, the messages taken in (as the runtime gave them), and the
// model's view as slots naming those messages.
type savedSession struct {
	Format  string               `json:"format"`
	Version int                  `json:"version"`
	Context json.RawMessage      `json:"context"`
	History []*schema.Message    `json:"history"`
	View    []savedSlot          `json:"view"`
	Broken  bool                 `json:"broken,omitempty"`
	User    pruneguard.StepID    `json:"user,omitempty"`
	Wait    []savedWait          `json:"wait,omitempty"`
	Recent  []pruneguard.CallID  `json:"recent,omitempty"`
	Tombs   map[string]string    `json:"tombstones,omitempty"`
	Lines   []pruneguard.Pointer `json:"lines,omitempty"`
}

// savedSlot is one message of the view: the number of the message taken
// in, and the message as sent when it is not that one (a stub, a
// summary, whose id Summary gives).
type savedSlot struct {
	Seq     uint64               `json:"seq"`
	Sent    *schema.Message      `json:"sent,omitempty"`
	Summary pruneguard.MessageID `json:"summary,omitempty"`
}

type savedWait struct {
	Call pruneguard.CallID `json:"call"`
	Eino string            `json:"eino"`
}

// Save writes the session's state to w, so that [Session.Restore], in
// this process or another, continues the conversation where it stands:
// the same list sent for the same next list given, the same decisions.
// It holds the session's lock while it builds the state; its only I/O
// is the write to w, whose error it returns. The Config is not saved:
// the session that restores brings its own, which should equal this
// one's.
func (s *Session) Save(w io.Writer) error {
	s.mu.Lock()
	b, err := s.encode()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// encode returns the sealed state, under the lock.
func (s *Session) encode() ([]byte, error) {
	var c bytes.Buffer
	if err := s.c.Save(&c); err != nil {
		return nil, err
	}
	st := savedSession{
		Format: sessionFormat, Version: sessionVersion, Context: c.Bytes(),
		History: s.hist, Broken: s.broken, User: s.user, Tombs: s.tombs, Lines: s.lines,
		View: make([]savedSlot, len(s.live)),
	}
	for i, sl := range s.live {
		st.View[i].Seq = sl.seq
		if sl.sum || s.shown[i] != s.hist[sl.seq-1] {
			st.View[i].Sent = s.shown[i]
		}
	}
	for id, n := range s.sums {
		if i, ok := s.findSeq(n); ok {
			st.View[i].Summary = id
		}
	}
	for _, w := range s.wait {
		st.Wait = append(st.Wait, savedWait{Call: w.call, Eino: w.eino})
	}
	st.Recent = slices.Sorted(maps.Keys(s.recent))
	b, err := json.Marshal(&st)
	if err != nil {
		return nil, err
	}
	return seal(b), nil
}

// seal appends the SHA-256 of the JSON object b to it, as its last field.
func seal(b []byte) []byte {
	sum := sha256.Sum256(b)
	out := append(b[:len(b)-1:len(b)-1], sealKey...)
	out = hex.AppendEncode(out, sum[:])
	return append(out, '"', '}')
}

// unseal returns the object seal was given, or false when b is not one
// it wrote.
func unseal(b []byte) ([]byte, bool) {
	const hexLen = 2 * sha256.Size
	n := len(b) - 2 - hexLen - len(sealKey)
	if n < 1 || !bytes.HasSuffix(b, []byte(`"}`)) || !bytes.Equal(b[n:n+len(sealKey)], []byte(sealKey)) {
		return nil, false
	}
	obj := append(bytes.Clone(b[:n]), '}')
	want, err := hex.DecodeString(string(b[n+len(sealKey) : len(b)-2]))
	sum := sha256.Sum256(obj)
	return obj, err == nil && bytes.Equal(want, sum[:])
}
