package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/pruneguard/pruneguard"
)

// RestoreSession rebuilds a [Session] from the state [Session.Save]
// wrote, with cfg, which should be the configuration of the session
// saved: the Guard, Counter, Spiller, Manifest and Logger are not saved.
// cfg.Dialect may be left empty, and is then the state's; a dialect
// other than the state's is refused. The session restored renders the
// same body as the one saved, keeps the same prompt prefix (the bytes a
// later [Session.Sync] compares are the same, so a body that continued
// the saved session's history continues the restored one's), and, given
// the same messages and requests after, makes the same decisions and
// reports the same [Report]s.
//
// State that Save did not write, that was truncated or altered since
// (its digest does not match), or that does not hold together (its
// journal does not replay, the Context it holds does not follow from the
// journal, or a session rebuilt from it would not save it byte for byte)
// fails with a *[pruneguard.InputError] matching
// [pruneguard.ErrBadState] and [pruneguard.ErrInvalidInput], naming the
// part of the state at fault. A configuration NewSession refuses fails
// with its error ([ErrSessionConfig]); an error reading r is returned as
// it is. On error it returns no Session.
//
// RestoreSession reads r to its end; its other I/O is the Spiller's,
// which verifies the pointers the state holds (see [pruneguard.Restore]),
// with context.Background(): use [RestoreSessionContext] to bound it.
func RestoreSession(r io.Reader, cfg SessionConfig) (*Session, error) {
	return RestoreSessionContext(context.Background(), r, cfg)
}

// RestoreSessionContext is [RestoreSession] with a context for the
// verification of pointers, as in [pruneguard.RestoreContext]: when ctx
// is done before every pointer is verified, it returns ctx's error and no
// Session.
func RestoreSessionContext(ctx context.Context, r io.Reader, cfg SessionConfig) (*Session, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	st, err := readSession(b)
	if err != nil {
		return nil, err
	}
	switch {
	case cfg.Dialect == "":
		cfg.Dialect = st.Dialect
	case cfg.Dialect != st.Dialect:
		return nil, badSession("dialect", string(st.Dialect), fmt.Sprintf("the configuration's dialect is %s", cfg.Dialect))
	}
	if historyKeyOf(cfg.Dialect) == "" {
		return nil, badSession("dialect", string(st.Dialect), "unknown dialect")
	}
	s, err := NewSession(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.replay(st.Journal); err != nil {
		return nil, err
	}
	c, err := pruneguard.RestoreContext(ctx, bytes.NewReader(st.Context), s.cfg.Config)
	if err != nil {
		return nil, err
	}
	if err := s.sameMessages(c); err != nil {
		return nil, err
	}
	s.ctx = c
	if err := s.verifyLines(ctx); err != nil {
		return nil, err
	}
	if err := s.holdsTogether(b); err != nil {
		return nil, err
	}
	return s, nil
}

// verifyLines verifies, when the Spiller is a [pruneguard.Verifier],
// the pointers the body shows that the Context does not hold (the lines
// of messages evicted, the pointers of stubs, the folds of the lines), so that their text is the
// Spiller's as it was. A pointer that does not verify is kept, as the
// Context keeps its own.
func (s *Session) verifyLines(ctx context.Context) error {
	v, ok := s.cfg.Spiller.(pruneguard.Verifier)
	if !ok {
		return nil
	}
	seen := map[pruneguard.Pointer]bool{}
	check := func(p pruneguard.Pointer) error {
		if p.IsZero() || seen[p] || v.Resolvable(p) {
			return nil
		}
		seen[p] = true
		_ = v.Verify(ctx, p)
		return ctx.Err()
	}
	for _, n := range s.spilled {
		if err := check(n.Pointer); err != nil {
			return err
		}
	}
	for _, e := range s.entries {
		if err := check(e.stubPtr); err != nil {
			return err
		}
	}
	for _, f := range s.folds {
		if err := check(f.ptr); err != nil {
			return err
		}
	}
	return nil
}

// badSession returns the error of RestoreSession for part of the state.
func badSession(part, id string, why any) error {
	return &pruneguard.InputError{Op: "restore.session." + part, ID: id, Err: fmt.Errorf("%w: %v", pruneguard.ErrBadState, why)}
}

// readSession checks the digest, the format and the version of a saved
// session and decodes it strictly: unknown members and trailing data are
// refused.
func readSession(b []byte) (*savedSession, error) {
	b = bytes.TrimRight(b, " \t\r\n")
	obj, ok := unsealSession(b)
	if !ok {
		return nil, badSession("", "", "not a saved session, or truncated or altered since: the digest does not match")
	}
	var st savedSession
	d := json.NewDecoder(bytes.NewReader(obj))
	d.DisallowUnknownFields()
	if err := d.Decode(&st); err != nil {
		return nil, badSession("", "", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, badSession("", "", "trailing data")
	}
	if st.Format != sessionFormat || st.Version != sessionVersion {
		return nil, badSession("format", st.Format, fmt.Sprintf("format %q version %d; want %q version %d", st.Format, st.Version, sessionFormat, sessionVersion))
	}
	if len(st.Context) == 0 || st.Journal == nil {
		return nil, badSession("", "", "no context or no journal")
	}
	return &st, nil
}

// sameMessages checks that the Context restored, c, holds each message
// the journal left as the journal's replay gave it to the session's own
// Context: its role, and its tokens unless a decision changed them.
func (s *Session) sameMessages(c *pruneguard.Context) error {
	for _, e := range s.entries {
		if e.gone || e.stubbed || e.summary {
			continue
		}
		fed, ok1 := s.ctx.Message(e.id)
		held, ok2 := c.Message(e.id)
		if !ok1 || !ok2 || fed.Role != held.Role || fed.Tokens != held.Tokens {
			return badSession("context", string(e.id), "the Context does not hold the message the journal gives")
		}
	}
	return nil
}

// holdsTogether checks a restored session: every message it holds is in
// its Context and every message it evicted is not, and it saves the
// state it was restored from, byte for byte.
func (s *Session) holdsTogether(b []byte) error {
	held := 0
	for _, e := range s.entries {
		if _, ok := s.ctx.Message(e.id); ok == e.gone {
			return badSession("context", string(e.id), "the Context does not hold the messages the journal leaves")
		}
		if !e.gone {
			held++
		}
	}
	if held != s.ctx.Len() {
		return badSession("context", "", fmt.Sprintf("the Context holds %d messages, the journal %d", s.ctx.Len(), held))
	}
	again, err := s.saved()
	if err != nil {
		return badSession("", "", err)
	}
	if !bytes.Equal(again, bytes.TrimRight(b, " \t\r\n")) {
		return badSession("", "", "the session rebuilt would not save this state")
	}
	return nil
}

// replay feeds the journal to a new session, through the paths that
// wrote it. The session's Context is a scratch one, replaced once the
// journal is replayed.
func (s *Session) replay(ops []jop) (err error) {
	i := 0
	defer func() {
		// Hostile state may break what the paths take for granted: it is
		// refused, never returned half built.
		if r := recover(); r != nil {
			err = badSession("journal", strconv.Itoa(i), fmt.Sprint(r))
		}
	}()
	rd := newReader(s.cfg.Dialect)
	for i = range ops {
		if err := s.replayOne(rd, &ops[i]); err != nil {
			return badSession("journal", strconv.Itoa(i), fmt.Sprintf("%s: %v", ops[i].Op, err))
		}
	}
	return nil
}

var errMissing = errors.New("a member the entry needs is missing")

// replayOne replays one entry of the journal.
func (s *Session) replayOne(rd *reader, op *jop) (err error) {
	switch op.Op {
	case jAppend:
		_, err = s.Append(op.Raw)
	case jSync:
		err = s.replaySynced(rd, op)
	case jEvent:
		if op.Event == nil {
			return errMissing
		}
		_, err = s.AppendMessage(op.Event.message())
	case jOpen:
		_, err = s.Open(op.Role, op.Calls...)
	case jText:
		err = s.WriteText(op.ID, string(op.Raw))
	case jCall:
		err = s.WriteCall(op.ID, op.Call, op.Name, string(op.Raw))
	case jClose:
		err = s.Close(op.ID)
	case jAbandon:
		err = s.Abandon(op.Calls...)
	case jTop:
		err = s.replayTop(op.Fields)
	case jDecision:
		if op.Decision == nil {
			return errMissing
		}
		s.recorded = s.recorded[:0] // each entry is a decision of its own
		s.record(op.Decision.decision())
	case jRestore:
		s.restoreState(op.Name)
	case jFold:
		if op.Pointer == nil {
			return errMissing
		}
		s.fold(pruneguard.Pointer{Store: op.Pointer.Store, Key: op.Pointer.Key})
	case jLine:
		if op.Pointer == nil || len(op.Raw) == 0 {
			return errMissing
		}
		s.cutLine(pruneguard.Pointer{Store: op.Pointer.Store, Key: op.Pointer.Key}, string(op.Raw))
	default:
		return errors.New("unknown entry")
	}
	return err
}

// replaySynced feeds a message of a synced body, as Sync did.
func (s *Session) replaySynced(rd *reader, op *jop) error {
	// Sync reads a message only once the body it came in was found to be
	// JSON.
	if !json.Valid(op.Raw) || (op.Span != nil && !json.Valid(op.Span)) {
		return errors.New("a message that is not JSON")
	}
	f, err := rd.message(op.Raw, len(op.Raw)-compactLen(op.Raw), false)
	if err != nil {
		return err
	}
	span := op.Raw
	if op.Span != nil {
		span = op.Span
	}
	if err := s.precheck([]facts{f}, len(s.entries)); err != nil {
		return err
	}
	if _, err := s.appendRawAs(f, span); err != nil {
		return err
	}
	s.journalSynced(f.raw, span)
	return nil
}

// replayTop sets the request's other fields, as SetRequest and Sync did.
func (s *Session) replayTop(fields []jfield) error {
	top := topFields{vals: make(map[string]json.RawMessage, len(fields))}
	for _, f := range fields {
		if _, dup := top.vals[f.Key]; dup || !json.Valid(f.Value) {
			return fmt.Errorf("field %q given twice or not JSON", f.Key)
		}
		if a, isArr := asArray(f.Value); f.Key == s.key && (!isArr || len(a) > 0) {
			return fmt.Errorf("%q must be empty", s.key)
		}
		top.keys = append(top.keys, f.Key)
		top.vals[f.Key] = json.RawMessage(f.Value)
	}
	s.top = top
	s.topChanged()
	s.journalTop()
	return s.registerTools()
}
