package einoguard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/cloudwego/eino/schema"
	"github.com/pruneguard/pruneguard"
)

// Restore replaces the session's state with the state [Session.Save]
// wrote, in this process or another, so that it sends what the saved
// session would have sent. ctx bounds the verification of spill
// pointers (see pruneguard.RestoreContext). State that fails its digest
// or does not hold together fails with a *[StateError] matching
// [ErrBadState], and the session is left as it was; an error reading r
// is returned as it is. With Config.Sessions, the store stays the
// conversation's state: the next pass loads it in place of this one.
func (s *Session) Restore(ctx context.Context, r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.decode(ctx, b); err != nil {
		return err
	}
	s.held = false
	return nil
}

// decode replaces the state with the one b holds, under the lock, or
// changes nothing.
func (s *Session) decode(ctx context.Context, b []byte) error {
	obj, ok := unseal(b)
	if !ok {
		return badState("sha256", nil)
	}
	var st savedSession
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return badState("json", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badState("json", fmt.Errorf("data after the state"))
	}
	if st.Format != sessionFormat || st.Version != sessionVersion {
		return badState("format", fmt.Errorf("%q version %d", st.Format, st.Version))
	}
	c, err := pruneguard.RestoreContext(ctx, bytes.NewReader(st.Context), s.cfg.Context)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return badState("context", err)
	}
	if err := st.check(c); err != nil {
		return err
	}
	if err := s.verifyLines(ctx, st.Lines); err != nil {
		return err
	}
	s.install(&st, c)
	return nil
}

// verifyLines has the spill store verify the pointers of the note's
// lines, as Restore verifies the Context's own, so that their lines
// read as the saved session's did. A pointer that fails stays, its line
// plain; only the end of ctx is an error.
func (s *Session) verifyLines(ctx context.Context, lines []pruneguard.Pointer) error {
	v, ok := s.cfg.Guard.Spill.(pruneguard.Verifier)
	if !ok {
		return nil
	}
	for _, p := range lines {
		if v.Resolvable(p) {
			continue
		}
		if v.Verify(ctx, p) != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// check refuses state that does not hold together with the Context c
// rebuilt from it: the view must name messages taken in, in order, each
// one the Context holds, and summaries must carry their message.
func (st *savedSession) check(c *pruneguard.Context) error {
	for k, m := range st.History {
		if m == nil {
			return badState("history", fmt.Errorf("message %d is null", k+1))
		}
	}
	last := uint64(0)
	sums := make(map[pruneguard.MessageID]bool)
	for i, sl := range st.View {
		if sl.Seq <= last || sl.Seq > uint64(len(st.History)) {
			return badState("view", fmt.Errorf("slot %d names message %d", i, sl.Seq))
		}
		last = sl.Seq
		id := messageID(sl.Seq)
		if sl.Summary != "" {
			if sl.Sent == nil || sums[sl.Summary] {
				return badState("view", fmt.Errorf("summary %q has no message, or two", sl.Summary))
			}
			sums[sl.Summary] = true
			id = sl.Summary
		}
		if _, ok := c.Message(id); !ok {
			return badState("view", fmt.Errorf("slot %d: message %q is not in the context", i, id))
		}
	}
	for _, w := range st.Wait {
		if w.Call == "" {
			return badState("wait", fmt.Errorf("a call waiting has no id"))
		}
	}
	return nil
}

// install makes st, checked, and c the session's state, under the lock.
func (s *Session) install(st *savedSession, c *pruneguard.Context) {
	_ = s.reset() // cannot fail: its Context is replaced below
	s.c = c
	s.seq = uint64(len(st.History))
	s.hist = st.History
	s.histHash = make([]uint64, len(s.hist))
	for k, m := range s.hist {
		s.histHash[k] = hashMessage(s.seed, m)
	}
	s.shown = make([]*schema.Message, len(st.View))
	s.live = make([]slot, len(st.View))
	for i, sl := range st.View {
		m := sl.Sent
		if m == nil {
			m = s.hist[sl.Seq-1]
		}
		s.shown[i] = m
		s.live[i] = slot{seq: sl.Seq, hash: s.histHash[sl.Seq-1], tok: s.cfg.Tokens(m), sum: sl.Summary != ""}
		if sl.Sent != nil {
			s.live[i].hash = hashMessage(s.seed, m)
		}
		if sl.Summary != "" {
			if s.sums == nil {
				s.sums = make(map[pruneguard.MessageID]uint64)
			}
			s.sums[sl.Summary] = sl.Seq
		}
		s.sent += s.live[i].tok
	}
	s.broken, s.user, s.tombs, s.lines = st.Broken, st.User, st.Tombs, st.Lines
	for _, w := range st.Wait {
		s.wait = append(s.wait, waiting{call: w.Call, eino: w.Eino})
	}
	for _, id := range st.Recent {
		if s.recent == nil {
			s.recent = make(map[pruneguard.CallID]bool)
		}
		s.recent[id] = true
	}
	s.fixNote()
}
