package pruneguard

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// The saved form of a Context (see [Context.Save]): one JSON object,
//
//	{"format": "pruneguard.context", "version": 1, ...}
//
// holding the Config's data fields and, in the order the Context keeps
// them, the messages, the calls, the units, the tools and their scopes,
// the planned steps, and what the Context remembers (pruned calls,
// pruned results, refetch alerts, ghost-tool episodes). Messages, calls,
// units and tools refer to each other by their place in these lists,
// counted from zero; -1 is none. Byte strings (content, arguments,
// schemas) are base64, as encoding/json writes []byte. A string the
// runtime chose (an id, a role, a tool name) is a JSON string when it is
// UTF-8, and otherwise an object {"base64": "..."} of its bytes.
//
// The object ends with a member "sha256": the hex SHA-256 of the
// object's bytes before it (the object as written without that member),
// so that a state altered after Save, even into other valid JSON, is
// refused. A reader refuses a state whose digest does not match, a
// format or version it does not know, a field it does not know, and
// trailing data. The fields of Config.PointerTokens
// (pointerTokens, pointerLines) are written only when it is set, and
// readEnd (how many messages the model has read) only when the
// messages do not say it, so a Context without them saves what earlier
// releases read.

const (
	stateFormat  = "pruneguard.context"
	stateVersion = 1
)

// ErrBadState: [Restore] was given state that [Context.Save] did not
// write, or that was truncated or corrupted since: it is not JSON, not
// of a known format or version, or what it says is inconsistent (a
// message in no unit, a call answered twice, a reference out of range).
// It is wrapped in an [*InputError] (Op "restore" or "restore." and the
// part of the state at fault) and so also matches [ErrInvalidInput].
var ErrBadState = errors.New("pruneguard: bad saved state")

// badState returns the error of Restore for part of the state, naming
// the offending id when there is one.
func badState(part, id string) error {
	op := "restore"
	if part != "" {
		op += "." + part
	}
	return inputErr(op, id, ErrBadState)
}

// str is a string the runtime chose, saved losslessly: a JSON string
// when it is UTF-8, otherwise {"base64": "..."}.
type str string

func (s str) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(s)) {
		return json.Marshal(string(s))
	}
	return json.Marshal(struct {
		B []byte `json:"base64"`
	}{[]byte(s)})
}

func (s *str) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '{' {
		var v struct {
			B []byte `json:"base64"`
		}
		if err := strict(b, &v); err != nil {
			return err
		}
		*s = str(v.B)
		return nil
	}
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = str(v)
	return nil
}

// strs converts a list of strings the runtime chose.
func strs[S ~string](in []S) []str {
	if in == nil {
		return nil
	}
	out := make([]str, len(in))
	for i, s := range in {
		out[i] = str(s)
	}
	return out
}

func unstrs[S ~string](in []str) []S {
	if in == nil {
		return nil
	}
	out := make([]S, len(in))
	for i, s := range in {
		out[i] = S(s)
	}
	return out
}

// b64 is the base64 of the bytes of a string, for keys that are hashes.
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

type savedState struct {
	Format   string        `json:"format"`
	Version  int           `json:"version"`
	Config   savedConfig   `json:"config"`
	Messages []savedMsg    `json:"messages"`
	Calls    []savedCall   `json:"calls"`
	Units    []savedUnit   `json:"units"`
	Pending  []int32       `json:"pending"` // pending calls, in the Context's order
	Open     []int32       `json:"open"`    // streaming messages, in the Context's order
	Tools    []savedTool   `json:"tools"`
	Unsound  []int32       `json:"unsound"` // tools, in the Context's order
	Scopes   []savedScope  `json:"scopes"`
	MutAny   int64         `json:"mutAny"`
	MutAll   int64         `json:"mutAll"`
	Steps    []savedStep   `json:"steps"`
	Sealed   bool          `json:"sealed"`
	Gone     []savedGone   `json:"gone"`    // oldest first
	Cleared  []savedPruned `json:"cleared"` // oldest first
	Alerts   []savedAlert  `json:"alerts"`
	Ghosts   []savedGhost  `json:"ghosts"` // oldest first
	Checks   uint64        `json:"checks"`
	// Lines are the pointers whose lines the Context counts (see
	// Config.PointerTokens), sorted; written only when there are some.
	Lines []savedPointer `json:"pointerLines,omitempty"`
	// ReadEnd is how many of the messages the model has read: those
	// before the first unread one (see Context.Unread). It is written
	// only when the messages do not say it, the model's last message
	// having left; a state without it (as earlier releases wrote) has read
	// the messages up to the model's last (see Context.Append).
	ReadEnd *int32 `json:"readEnd,omitempty"`
	// ResAny, ResAll and Paths are the marks of the mutating calls that
	// named their resources (see Tool.ScopeArgs); written only when some
	// did, so that a state without them reads as earlier releases wrote
	// it: every mutating call touched all of its scope.
	ResAny int64       `json:"resAny,omitempty"`
	ResAll int64       `json:"resAll,omitempty"`
	Paths  []savedPath `json:"paths,omitempty"`
}

type savedPointer struct {
	Store str `json:"store"`
	Key   str `json:"key"`
}

type savedConfig struct {
	Boundary     BoundaryMode `json:"boundary"`
	Regen        RegenMode    `json:"regen"`
	TextClass    Class        `json:"textClass"`
	NoTombstones bool         `json:"noTombstones"`
	Ceiling      int          `json:"ceiling"`
	HoardTokens  int          `json:"hoardTokens"`
	StubText     str          `json:"stubText"`
	StubTokens   int          `json:"stubTokens"`
	// PointerTokens is written only when set: state without it reads
	// as before.
	PointerTokens int `json:"pointerTokens,omitempty"`
}

type savedMsg struct {
	ID     str    `json:"id"`
	Role   str    `json:"role"`
	Tokens int    `json:"tokens"`
	Unit   int32  `json:"unit"`
	Body   []byte `json:"body,omitempty"` // the content held: none when stubbed, the stream so far when open
	// Empty says the content is empty but not nil.
	Empty    bool    `json:"empty,omitempty"`
	Open     bool    `json:"open,omitempty"`
	Counted  bool    `json:"counted,omitempty"` // open with no count: the Counter counts it
	Stubbed  bool    `json:"stubbed,omitempty"`
	Pinned   bool    `json:"pinned,omitempty"`
	Class    Class   `json:"class,omitempty"`
	Facts    Facts   `json:"facts,omitempty"`
	Store    str     `json:"store,omitempty"` // the pointer
	Key      str     `json:"key,omitempty"`
	NeededBy []str   `json:"neededBy"`
	Requires []int32 `json:"requires,omitempty"` // tools
	IsError  bool    `json:"isError,omitempty"`
	Calls    []int32 `json:"calls,omitempty"`   // the calls it emits, in order
	Answers  []int32 `json:"answers,omitempty"` // the calls it answers, in order
}

type savedCall struct {
	ID        str    `json:"id"`
	Tool      int32  `json:"tool"`
	Args      []byte `json:"args"` // null when nil
	Ver       uint32 `json:"ver,omitempty"`
	Done      bool   `json:"done,omitempty"`
	Ghost     bool   `json:"ghost,omitempty"`
	Server    bool   `json:"server,omitempty"`
	Abandoned bool   `json:"abandoned,omitempty"`
	// Superseded: the call's message is held, but its id no longer names
	// it, since a later call with the id was made (and may have been
	// pruned since).
	Superseded bool `json:"superseded,omitempty"`
}

// savedUnit is a unit; its members are the messages that name it.
type savedUnit struct {
	Version uint32 `json:"version"`
}

type savedTool struct {
	Name        str         `json:"name"`
	Schema      []byte      `json:"schema"`
	Version     str         `json:"version,omitempty"`
	Annotations Annotations `json:"annotations"`
	Output      Class       `json:"output,omitempty"`
	NoTombstone bool        `json:"noTombstone,omitempty"`
	Family      str         `json:"family,omitempty"`
	Scope       str         `json:"scope,omitempty"`
	ScopeArgs   []str       `json:"scopeArgs,omitempty"`
	Registered  bool        `json:"registered,omitempty"`
	Resident    bool        `json:"resident,omitempty"`
	Tombstoned  bool        `json:"tombstoned,omitempty"`
	Compressed  []byte      `json:"compressed"`
	Lossy       bool        `json:"lossy,omitempty"`
	Ver         uint32      `json:"ver,omitempty"`
	// The counters of [ToolState].
	Reexpansions         int `json:"reexpansions,omitempty"`
	GhostCalls           int `json:"ghostCalls,omitempty"`
	Refetches            int `json:"refetches,omitempty"`
	IrreducibleRefetches int `json:"irreducibleRefetches,omitempty"`
	GhostCopies          int `json:"ghostCopies,omitempty"`
	GhostRejections      int `json:"ghostRejections,omitempty"`
	GhostDetours         int `json:"ghostDetours,omitempty"`
	GhostTriads          int `json:"ghostTriads,omitempty"`
	MismatchedRefetches  int `json:"mismatchedRefetches,omitempty"`
	// The tokens of the schema, the compressed schema and the tombstone,
	// as the Counter counted them.
	SchemaTokens     int                `json:"schemaTokens,omitempty"`
	CompressedTokens int                `json:"compressedTokens,omitempty"`
	TombstoneTokens  int                `json:"tombstoneTokens,omitempty"`
	Last             int64              `json:"last,omitempty"`
	Window           [ghostWindow]int32 `json:"window"` // calls plus one, zero for none
	WindowAt         uint8              `json:"windowAt,omitempty"`
}

type savedScope struct {
	Name str   `json:"name"`
	Mut  int64 `json:"mut,omitempty"`
	Res  int64 `json:"res,omitempty"`
}

// savedPath is the marks of a path that mutating calls named (see
// Tool.ScopeArgs); Scope is the scope's index plus one, 0 for the empty
// scope, -1 for all of them.
type savedPath struct {
	Scope int32 `json:"scope"`
	Path  str   `json:"path"`
	At    int64 `json:"at,omitempty"`
	Under int64 `json:"under"`
}

type savedStep struct {
	ID   str     `json:"id"`
	Refs []int32 `json:"refs"` // messages
}

type savedGone struct {
	Call      str  `json:"call"`
	Abandoned bool `json:"abandoned,omitempty"`
}

type savedPruned struct {
	Sig     string      `json:"sig"` // base64
	Class   Class       `json:"class,omitempty"`
	Hash    ContentHash `json:"hash"`
	Message str         `json:"message"`
	Stubbed bool        `json:"stubbed,omitempty"`
}

type savedAlert struct {
	Tool    str         `json:"tool"`
	Call    str         `json:"call"`
	Result  str         `json:"result"`
	Pruned  str         `json:"pruned"`
	Stubbed bool        `json:"stubbed,omitempty"`
	Class   Class       `json:"class,omitempty"`
	Match   bool        `json:"match,omitempty"`
	Was     ContentHash `json:"was"`
	Now     ContentHash `json:"now"`
}

type savedGhost struct {
	Tool        int32 `json:"tool"`
	Open        bool  `json:"open,omitempty"`
	From        str   `json:"from,omitempty"`
	Call        str   `json:"call,omitempty"`
	Copied      str   `json:"copied,omitempty"`
	Missing     []str `json:"missing,omitempty"`
	Stale       []str `json:"stale,omitempty"`
	Rejected    str   `json:"rejected,omitempty"`
	Fields      []str `json:"fields,omitempty"`
	Sibling     str   `json:"sibling,omitempty"`
	SiblingCall str   `json:"siblingCall,omitempty"`
	Reexpanded  bool  `json:"reexpanded,omitempty"`
}

// digestKey is the member that ends a saved state.
const digestKey = `,"sha256":"`

// sealState appends the digest member to b, a JSON object as
// json.Marshal writes it.
func sealState(b []byte) []byte {
	sum := sha256.Sum256(b)
	out := make([]byte, 0, len(b)+len(digestKey)+2*len(sum)+2)
	out = append(out, b[:len(b)-1]...)
	if len(b) > 2 {
		out = append(out, digestKey...)
	} else {
		out = append(out, digestKey[1:]...)
	}
	out = hex.AppendEncode(out, sum[:])
	return append(out, '"', '}')
}

// unsealState returns the object sealState was given, and whether the
// digest b ends with matches it.
func unsealState(b []byte) ([]byte, bool) {
	b = bytes.TrimRight(b, " \t\r\n")
	const hexLen = 2 * sha256.Size
	if len(b) < hexLen+len(digestKey)+1 || !bytes.HasSuffix(b, []byte(`"}`)) {
		return nil, false
	}
	end := len(b) - 2
	digest := b[end-hexLen : end]
	head := b[:end-hexLen]
	var obj []byte
	switch {
	case bytes.HasSuffix(head, []byte(digestKey)):
		obj = append(bytes.Clone(head[:len(head)-len(digestKey)]), '}')
	case bytes.Equal(head, []byte("{"+digestKey[1:])):
		obj = []byte("{}")
	default:
		return nil, false
	}
	var want [sha256.Size]byte
	if n, err := hex.Decode(want[:], digest); err != nil || n != sha256.Size {
		return nil, false
	}
	return obj, sha256.Sum256(obj) == want
}

// strict decodes b into v, refusing unknown fields and trailing data.
func strict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimSpace(b[d.InputOffset():])) > 0 {
		return errors.New("trailing data")
	}
	return nil
}
