package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
)

// The saved form of a [Session] (see [Session.Save]) is one JSON object,
// version 1 of the format "pruneguard.session":
//
//	{"format": "pruneguard.session", "version": 1, "dialect": "anthropic",
//	 "journal": [
//	  {"op": "top", "fields": [{"key": "model", "value": "ImNsYXVkZSI="}, ...]},
//	  {"op": "sync", "raw": "eyJyb2xlIjoidXNlciIsLi4ufQ=="},
//	  {"op": "decision", "decision": {"evict": ["m1", "m2"], "pointers": [...]}},
//	  ...],
//	 "context": {"format": "pruneguard.context", "version": 2, ...},
//	 "sha256": "..."}
//
// The journal is what the session was given since its history began,
// in order, and what the guard's decisions did to the history (see
// session_journal.go for its entries); bytes the runtime gave (messages,
// fields, deltas, arguments) are base64, so that every byte comes back.
// The context is the state [pruneguard.Context.Save] wrote of the
// session's Context, whole, with its own digest. The object ends with
// the SHA-256 of the rest, as the Context's state does.
const (
	sessionFormat  = "pruneguard.session"
	sessionVersion = 1
)

// savedSession is the saved form of a Session.
type savedSession struct {
	Format  string          `json:"format"`
	Version int             `json:"version"`
	Dialect Dialect         `json:"dialect"`
	Journal []jop           `json:"journal"`
	Context json.RawMessage `json:"context"`
}

// Save writes the session's state to w: the messages as they were given
// (byte for byte, evicted ones included, as a later [Session.Sync]
// compares them), the request's other fields, what the guard's decisions
// did to the history (evictions, stubs, schemas withdrawn or compressed,
// tombstones and pointer lines, summaries), streams still open, calls
// abandoned, and the session's [pruneguard.Context] as
// [pruneguard.Context.Save] writes it (its refusals remembered, spills,
// counters). [RestoreSession] rebuilds from it a session that renders
// the same body, keeps the same prompt prefix and makes the same
// decisions as this one. The state is JSON with a SHA-256 digest, so
// that an alteration is found; equal sessions save equal bytes. Its size
// grows with what the session was fed since its history began, evicted
// messages included.
//
// What the configuration holds (the Guard, the Counter, the Spiller, the
// Manifest, the Logger) is not saved: restore with the same
// [SessionConfig]. A spilled segment stays in the Spiller's store, which
// must outlive the state for the pointers to resolve.
//
// Save holds the session's lock while it reads the state, so other
// methods wait for it; it releases the lock before it encodes and
// writes, so a slow writer holds up nobody. Its only I/O is the writes
// to w, whose error it returns.
func (s *Session) Save(w io.Writer) error {
	b, err := s.saved()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// saved returns the session's state, sealed.
func (s *Session) saved() ([]byte, error) {
	var cb bytes.Buffer
	s.mu.Lock()
	err := s.ctx.Save(&cb)
	// Entries of the journal are never changed once appended: a copy of
	// its header is a snapshot.
	jr := s.jr[:len(s.jr):len(s.jr)]
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if jr == nil {
		jr = []jop{}
	}
	st := savedSession{Format: sessionFormat, Version: sessionVersion, Dialect: s.cfg.Dialect, Journal: jr, Context: cb.Bytes()}
	b, err := json.Marshal(&st)
	if err != nil {
		return nil, err
	}
	return sealSession(b), nil
}

// sessionDigest is the member that ends a saved session.
const sessionDigest = `,"sha256":"`

// sealSession appends the digest member to b, a JSON object of at least
// one member as json.Marshal writes it.
func sealSession(b []byte) []byte {
	sum := sha256.Sum256(b)
	out := make([]byte, 0, len(b)+len(sessionDigest)+2*sha256.Size+2)
	out = append(out, b[:len(b)-1]...)
	out = append(out, sessionDigest...)
	out = hex.AppendEncode(out, sum[:])
	return append(out, '"', '}')
}

// unsealSession returns the object sealSession was given, and whether
// the digest that ends b matches it.
func unsealSession(b []byte) ([]byte, bool) {
	const hexLen = 2 * sha256.Size
	if len(b) < len(sessionDigest)+hexLen+4 || !bytes.HasSuffix(b, []byte(`"}`)) {
		return nil, false
	}
	end := len(b) - 2
	head, digest := b[:end-hexLen], b[end-hexLen:end]
	if !bytes.HasSuffix(head, []byte(sessionDigest)) {
		return nil, false
	}
	var want [sha256.Size]byte
	if n, err := hex.Decode(want[:], digest); err != nil || n != sha256.Size {
		return nil, false
	}
	h := sha256.New()
	h.Write(head[:len(head)-len(sessionDigest)])
	h.Write([]byte{'}'})
	if !bytes.Equal(h.Sum(nil), want[:]) {
		return nil, false
	}
	return append(bytes.Clone(head[:len(head)-len(sessionDigest)]), '}'), true
}
