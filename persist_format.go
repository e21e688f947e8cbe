package pruneguard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// The saved form of a Context (see [Context.Save]), version 2. It says
// what a runtime could tell a new process about the session, in the
// terms of the package's API: the messages as they were given and what
// events did to them since, the tool registry, the plan, and what the
// Context remembers. It names nothing of how the Context keeps them:
// [Restore] replays it through the paths events take.
//
// The state is one JSON object. A message is named by its id, a call by
// the message that made it and its own id ({"message": "a1", "call":
// "k1"}: ids of calls may be used again), a tool by its name. Classes,
// modes, gates and facts are names. A string the runtime chose (an id, a
// role, a name, a content, arguments, a schema) is a JSON string when it
// is UTF-8, and otherwise an object {"base64": "..."} of its bytes, so
// that every byte comes back. A member whose value is zero (false, 0,
// "", an empty list) may be left out, and Save leaves it out. This
// state (which the package's tests restore) holds a schema withdrawn
// behind a tombstone, a pure read the model has read and that was
// stubbed, and a pending call to the withdrawn tool:
//
//	{"format": "pruneguard.context", "version": 2,
//	 "config": {"boundary": "relaxed", "textClass": "reconstructible"},
//	 "tools": [
//	  {"name": "deploy", "registered": true, "scope": "prod", "withdrawn": true, "tombstoned": true,
//	   "recentCalls": [{"message": "a2", "call": "k2"}]},
//	  {"name": "grep", "registered": true, "schema": "{\"type\":\"object\"}",
//	   "annotations": {"readOnlyHint": true, "openWorldHint": false}, "scope": "repo",
//	   "recentCalls": [{"message": "a1", "call": "k1"}]}],
//	 "messages": [
//	  {"id": "sys", "role": "system", "tokens": 50, "content": "You are ...", "pinned": true},
//	  {"id": "a1", "role": "assistant", "tokens": 20,
//	   "calls": [{"id": "k1", "tool": "grep", "args": "{\"q\":\"x\"}", "state": "answered"}]},
//	  {"id": "r1", "role": "tool", "tokens": 8, "answers": ["k1"], "stubbed": true},
//	  {"id": "a2", "role": "assistant", "tokens": 20,
//	   "calls": [{"id": "k2", "tool": "deploy", "args": "{}", "state": "pending", "ghost": true}]}],
//	 "checks": 4,
//	 "sha256": "..."}
//
// The members, in the order Save writes them:
//
//   - config: the data fields of the [Config] (not its Oracle, Resolver,
//     Counter, SummaryCounter or Text): boundary ("strict", "relaxed"),
//     regen ("refuse", "drop-unsafe"), textClass, noTombstones,
//     ceiling, hoardTokens, stubText, stubTokens, pointerTokens. A
//     class is "unset", "reconstructible", "durable" or "irreducible" (a
//     number stands for a value beyond those, which counts as
//     irreducible).
//   - tools, sorted by name: every tool registered, called or required.
//     name; registered, and then the fields of its [Tool]: schema,
//     version, annotations (the MCP hints), output (a class),
//     noTombstone, family, scope, scopeArgs; migrations: how many registrations
//     changed its schema's version (calls made before the last one are
//     "stale"); withdrawn: its schema is out of the prompt; compressed:
//     the schema the prompt shows in its place; tombstoned: a tombstone
//     stands for it; schemaTokens, compressedTokens, tombstoneTokens:
//     what the Counter counted of them; the counters of [ToolState]
//     (reexpansions, ghostCalls, refetches, irreducibleRefetches,
//     ghostCopies, ghostRejections, ghostDetours, ghostTriads,
//     mismatchedRefetches); recentCalls: its latest calls, at most 8,
//     oldest first, null for one no longer held, which a call rebuilt
//     from earlier arguments is compared with ([GhostEvidence]);
//     prunedLastCall: when its latest call is no longer held, where it
//     came: {"after": call}, after that call held and before the next,
//     or {} before every call held (a read before it stays stale).
//   - messages, in transcript order, as [Message] gives them: id, role,
//     tokens, content (left out for nil, "" when empty; a stubbed
//     message holds the stub, and no content), open (still streaming:
//     the content is what came so far), counted (opened with no count:
//     the Counter counts its chunks), calls, answers (call ids, each the
//     latest call with that id made before the message), pinned, class,
//     facts ("negative-result", "transient-state", "one-time-secret",
//     "sole-user-constraint"), pointer {"store", "key"}, neededBy (as
//     given: [] is not left out), requires (tool names), isError,
//     stubbed; and, for a message of [RoleSummary] that a [Summary]
//     placed, carries (the pointers it carries) and holds (the facts of
//     its run it carries, {"kind", "text", "key"}, kind as [Fact] names
//     it). A call is {"id", "tool", "args" (left out for nil), "server",
//     "state", "ghost", "stale", "superseded"}: state is "pending" (no
//     closed result), "answered" or "abandoned"; ghost says it was made
//     while its tool's schema was not shown whole; stale, under an older
//     version of the schema; superseded, that a later call took its id
//     and was pruned since, so that the id names no call.
//   - closes: calls are made in transcript order, but for those given to
//     [Context.Close] after later messages had been added: each such
//     close, in the order made, is {"message", "calls": how many of its
//     last calls came with the close, "after": the message added last
//     before it}.
//   - couplings: messages in one unit otherwise than by calls and their
//     results ([Context.Couple]), a list of ids each: one message of each
//     part the calls and results make, in transcript order.
//   - readThrough: the last message the model has read ([Context.Unread]),
//     when it comes after the model's own last message.
//   - steps, sorted by id: each planned step {"id", "needs"}, the
//     messages held it will read. sealed: the plan is sealed.
//   - mutations: written only when a mutating call named the resources
//     it touched ([Tool.ScopeArgs]): where the latest mutating calls
//     came, which the calls held cannot tell once some have gone.
//     wholeAny and wholeAll: the latest that touched all of its scope,
//     of any scope and of tools with none; namedAny and namedAll, the
//     latest that named resources; scopes, per scope {"name", "whole",
//     "named"}; paths, per path named or holding one named {"scope" or
//     "anyScope", "path", "at": the latest naming it, "under": the
//     latest naming it or a path inside it}. A mark is {"call": call}
//     at a call held, {"after": call} after that call and before the
//     next held, or {} before every call held. Without the member, each
//     mutating tool's latest call counts as touching all of its scope.
//   - pointerLines: the pointers whose lines the Context counts
//     (Config.PointerTokens), sorted.
//   - memory: what the Context remembers. prunedCalls {"call",
//     "abandoned"} and prunedResults {"signature", "class", "hash",
//     "message", "stubbed"}, the latest 4,096 each, oldest first, null
//     for a slot forgotten since; a signature is the hex of the first 16
//     bytes of the SHA-256 of the tool's name, a zero byte and the
//     arguments in canonical JSON (a one byte and the arguments as they
//     are, when they are not JSON). alerts: the [RefetchAlert]s not yet
//     taken, hashes in hex. ghosts: the [GhostEvidence] of the latest
//     episodes, oldest first, each with its tool, whether it is open,
//     and from, the message of its latest ghost call. reexpansions: the
//     schemas the model asked back not yet logged ({"tool",
//     "tombstoned", "withdrawn"}). refusedUnits and refusedStubs: the
//     refusals the guards remember ([Context.Refusals]), {"unit" or
//     "message", "violations"}, each violation as [Violation] says it,
//     or for a run of units a guard's sweep refused for one reason,
//     {"run": its units, "violations": the one naming them}. swept:
//     where the guards' next sweep starts, the first message of a unit
//     (left out for the first unit), or sweptAll: after the last;
//     sweptPassed: the first messages of the units it passed in flight
//     or unread, which the next sweep takes up, in transcript order.
//   - checks: how many guard checks ran, so that [Result.Compaction]
//     counts on.
//
// The object ends with a member "sha256": the hex SHA-256 of the
// object's bytes before it (the object as written without that member),
// so that a state altered after Save, even into other valid JSON, is
// refused. A reader refuses a state whose digest does not match, a
// format or version it does not know, a member it does not know,
// trailing data, and a state that does not hold together: a reference
// to nothing, a call's state its results contradict, a list out of its
// order. The Context it rebuilds must save the state it read.
//
// Version 1, which earlier releases wrote, named records by their place
// in lists and wrote the Context's bookkeeping; it is still read.

const (
	stateFormat  = "pruneguard.context"
	stateVersion = 2
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

// badStateBecause is badState saying why.
func badStateBecause(part, id string, why any) error {
	e := badState(part, id).(*InputError)
	e.Err = fmt.Errorf("%w: %v", ErrBadState, why)
	return e
}

type savedState struct {
	Format      string          `json:"format"`
	Version     int             `json:"version"`
	Config      savedConfig     `json:"config"`
	Tools       []savedTool     `json:"tools,omitempty"`
	Messages    []savedMessage  `json:"messages,omitempty"`
	Closes      []savedClose    `json:"closes,omitempty"`
	Couplings   [][]str         `json:"couplings,omitempty"`
	ReadThrough str             `json:"readThrough,omitempty"`
	Steps       []savedStep     `json:"steps,omitempty"`
	Sealed      bool            `json:"sealed,omitempty"`
	Mutations   *savedMutations `json:"mutations,omitempty"`
	Lines       []savedPointer  `json:"pointerLines,omitempty"`
	Memory      savedMemory     `json:"memory,omitzero"`
	Checks      uint64          `json:"checks,omitempty"`
}

type savedConfig struct {
	Boundary      boundaryName `json:"boundary,omitempty"`
	Regen         regenName    `json:"regen,omitempty"`
	TextClass     className    `json:"textClass,omitempty"`
	NoTombstones  bool         `json:"noTombstones,omitempty"`
	Ceiling       int          `json:"ceiling,omitempty"`
	HoardTokens   int          `json:"hoardTokens,omitempty"`
	StubText      str          `json:"stubText,omitempty"`
	StubTokens    int          `json:"stubTokens,omitempty"`
	PointerTokens int          `json:"pointerTokens,omitempty"`
}

type savedTool struct {
	Name        str         `json:"name"`
	Registered  bool        `json:"registered,omitempty"`
	Schema      *str        `json:"schema,omitempty"`
	Version     str         `json:"version,omitempty"`
	Annotations Annotations `json:"annotations,omitzero"`
	Output      className   `json:"output,omitempty"`
	NoTombstone bool        `json:"noTombstone,omitempty"`
	Family      str         `json:"family,omitempty"`
	Scope       str         `json:"scope,omitempty"`
	ScopeArgs   []str       `json:"scopeArgs,omitempty"`
	Migrations  uint32      `json:"migrations,omitempty"`
	Withdrawn   bool        `json:"withdrawn,omitempty"`
	Compressed  *str        `json:"compressed,omitempty"`
	Tombstoned  bool        `json:"tombstoned,omitempty"`

	SchemaTokens     int `json:"schemaTokens,omitempty"`
	CompressedTokens int `json:"compressedTokens,omitempty"`
	TombstoneTokens  int `json:"tombstoneTokens,omitempty"`

	Reexpansions         int `json:"reexpansions,omitempty"`
	GhostCalls           int `json:"ghostCalls,omitempty"`
	Refetches            int `json:"refetches,omitempty"`
	IrreducibleRefetches int `json:"irreducibleRefetches,omitempty"`
	GhostCopies          int `json:"ghostCopies,omitempty"`
	GhostRejections      int `json:"ghostRejections,omitempty"`
	GhostDetours         int `json:"ghostDetours,omitempty"`
	GhostTriads          int `json:"ghostTriads,omitempty"`
	MismatchedRefetches  int `json:"mismatchedRefetches,omitempty"`

	Recent     []*savedCallRef `json:"recentCalls,omitempty"`
	PrunedLast *savedAfter     `json:"prunedLastCall,omitempty"`
}

// savedCallRef names a call: the message that made it and its id.
type savedCallRef struct {
	Message str `json:"message"`
	Call    str `json:"call"`
}

// savedAfter places a call no longer held: after the call named, or,
// with none, before every call held.
type savedAfter struct {
	After *savedCallRef `json:"after,omitempty"`
}

type savedMessage struct {
	ID       str            `json:"id"`
	Role     str            `json:"role,omitempty"`
	Tokens   int            `json:"tokens,omitempty"`
	Content  *str           `json:"content,omitempty"`
	Open     bool           `json:"open,omitempty"`
	Counted  bool           `json:"counted,omitempty"`
	Calls    []savedCall    `json:"calls,omitempty"`
	Answers  []str          `json:"answers,omitempty"`
	Pinned   bool           `json:"pinned,omitempty"`
	Class    className      `json:"class,omitempty"`
	Facts    factNames      `json:"facts,omitempty"`
	Pointer  *savedPointer  `json:"pointer,omitempty"`
	NeededBy *[]str         `json:"neededBy,omitempty"`
	Requires []str          `json:"requires,omitempty"`
	IsError  bool           `json:"isError,omitempty"`
	Stubbed  bool           `json:"stubbed,omitempty"`
	Carries  []savedPointer `json:"carries,omitempty"`
	Holds    []savedFact    `json:"holds,omitempty"`
}

// The states of a call.
const (
	callPending   = "pending"
	callAnswered  = "answered"
	callAbandoned = "abandoned"
)

type savedCall struct {
	ID         str    `json:"id"`
	Tool       str    `json:"tool"`
	Args       *str   `json:"args,omitempty"`
	Server     bool   `json:"server,omitempty"`
	State      string `json:"state"`
	Ghost      bool   `json:"ghost,omitempty"`
	Stale      bool   `json:"stale,omitempty"`
	Superseded bool   `json:"superseded,omitempty"`
}

type savedPointer struct {
	Store str `json:"store"`
	Key   str `json:"key"`
}

// savedFact is a fact a summary carries: kind as Fact names it.
type savedFact struct {
	Kind string `json:"kind"`
	Text str    `json:"text"`
	Key  str    `json:"key,omitempty"`
}

type savedClose struct {
	Message str `json:"message"`
	Calls   int `json:"calls"`
	After   str `json:"after"`
}

type savedStep struct {
	ID    str   `json:"id"`
	Needs []str `json:"needs,omitempty"`
}

type savedMemory struct {
	PrunedCalls   []*savedGone   `json:"prunedCalls,omitempty"`
	PrunedResults []*savedPruned `json:"prunedResults,omitempty"`
	Alerts        []savedAlert   `json:"alerts,omitempty"`
	Ghosts        []savedGhost   `json:"ghosts,omitempty"`
	Reexpansions  []savedReexp   `json:"reexpansions,omitempty"`
	RefusedUnits  []savedRefusal `json:"refusedUnits,omitempty"`
	RefusedStubs  []savedRefusal `json:"refusedStubs,omitempty"`
	// Swept is where the guards' next sweep starts: the first message of
	// a unit, or, with SweptAll, after the last message.
	Swept    str  `json:"swept,omitempty"`
	SweptAll bool `json:"sweptAll,omitempty"`
	// SweptPassed are the units the sweep passed in flight or unread, by
	// their first messages, which the next sweep takes up.
	SweptPassed []str `json:"sweptPassed,omitempty"`
}

type savedGone struct {
	Call      str  `json:"call"`
	Abandoned bool `json:"abandoned,omitempty"`
}

type savedPruned struct {
	Signature hexBytes  `json:"signature"`
	Class     className `json:"class,omitempty"`
	Hash      hexHash   `json:"hash"`
	Message   str       `json:"message"`
	Stubbed   bool      `json:"stubbed,omitempty"`
}

type savedAlert struct {
	Tool    str       `json:"tool"`
	Call    str       `json:"call"`
	Result  str       `json:"result"`
	Pruned  str       `json:"pruned"`
	Stubbed bool      `json:"stubbed,omitempty"`
	Class   className `json:"class,omitempty"`
	Match   bool      `json:"match,omitempty"`
	Was     hexHash   `json:"was"`
	Now     hexHash   `json:"now"`
}

type savedGhost struct {
	Tool        str   `json:"tool"`
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

type savedReexp struct {
	Tool       str  `json:"tool"`
	Tombstoned bool `json:"tombstoned,omitempty"`
	Withdrawn  bool `json:"withdrawn,omitempty"`
}

// savedRefusal is a refusal a guard remembers: of a unit (named by its
// first message) or of a result's stub.
type savedRefusal struct {
	Unit str `json:"unit,omitempty"`
	// Run names the units of a sweep's run, next to each other, when the
	// one violation names them all.
	Run        []str            `json:"run,omitempty"`
	Message    str              `json:"message,omitempty"`
	Violations []savedViolation `json:"violations"`
}

type savedViolation struct {
	Gate     gateName          `json:"gate"`
	Code     str               `json:"code"`
	Units    []str             `json:"units,omitempty"`
	Messages []str             `json:"messages,omitempty"`
	Tools    []str             `json:"tools,omitempty"`
	Calls    []str             `json:"calls,omitempty"`
	Steps    []str             `json:"steps,omitempty"`
	Facts    []savedPublicFact `json:"facts,omitempty"`
}

type savedPublicFact struct {
	Message str `json:"message"`
	Kind    str `json:"kind"`
	Text    str `json:"text"`
}

// str is a string the runtime chose, saved losslessly: a JSON string
// when it is UTF-8, otherwise {"base64": "..."}.
type str string

func (s str) MarshalJSON() ([]byte, error) {
	if plain(string(s)) {
		b := make([]byte, 0, len(s)+2)
		return append(append(append(b, '"'), s...), '"'), nil
	}
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
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' && plain(string(b[1:len(b)-1])) {
		*s = str(b[1 : len(b)-1])
		return nil
	}
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = str(v)
	return nil
}

// plain reports whether s is written in JSON as it is between quotes:
// printable ASCII but for the quote, the backslash and what
// encoding/json escapes in HTML (<, > and &).
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch < 0x20 || ch >= 0x7f, ch == '"', ch == '\\', ch == '<', ch == '>', ch == '&':
			return false
		}
	}
	return true
}

// optStr returns b as an optional str: nil for nil.
func optStr(b []byte) *str {
	if b == nil {
		return nil
	}
	s := str(b)
	return &s
}

// bytesOf returns the bytes of an optional str: nil for nil.
func bytesOf(s *str) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
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

// Names of the enumerations, by value.
var (
	boundaryNames = []string{"strict", "relaxed"}
	regenNames    = []string{"refuse", "drop-unsafe"}
	classNames    = []string{"unset", "reconstructible", "durable", "irreducible"}
	gateNames     = []string{"", "boundary", "schema", "regen", "screen"}
)

// marshalName writes v as its name, or as a number beyond the names.
func marshalName(v int, names []string) ([]byte, error) {
	if v >= 0 && v < len(names) {
		return json.Marshal(names[v])
	}
	return strconv.AppendInt(nil, int64(v), 10), nil
}

// unmarshalName reads a name of names, or a number beyond them up to
// most.
func unmarshalName(b []byte, names []string, most int) (int, error) {
	var name string
	if json.Unmarshal(b, &name) == nil {
		if i := slices.Index(names, name); i >= 0 {
			return i, nil
		}
		return 0, fmt.Errorf("unknown name %q", name)
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return 0, err
	}
	if n < len(names) || n > most {
		return 0, fmt.Errorf("%d is not a value without a name", n)
	}
	return n, nil
}

type boundaryName BoundaryMode

func (v boundaryName) MarshalJSON() ([]byte, error) { return marshalName(int(v), boundaryNames) }
func (v *boundaryName) UnmarshalJSON(b []byte) error {
	n, err := unmarshalName(b, boundaryNames, 255)
	*v = boundaryName(n)
	return err
}

type regenName RegenMode

func (v regenName) MarshalJSON() ([]byte, error) { return marshalName(int(v), regenNames) }
func (v *regenName) UnmarshalJSON(b []byte) error {
	n, err := unmarshalName(b, regenNames, 255)
	*v = regenName(n)
	return err
}

type className Class

func (v className) MarshalJSON() ([]byte, error) { return marshalName(int(v), classNames) }
func (v *className) UnmarshalJSON(b []byte) error {
	n, err := unmarshalName(b, classNames, 255)
	*v = className(n)
	return err
}

type gateName Gate

func (v gateName) MarshalJSON() ([]byte, error) { return marshalName(int(v), gateNames) }
func (v *gateName) UnmarshalJSON(b []byte) error {
	n, err := unmarshalName(b, gateNames, 1<<30)
	*v = gateName(n)
	return err
}

// factNames are Facts as a list: the codes of the facts named, in their
// order, and the value of any other bit.
type factNames Facts

func (f factNames) MarshalJSON() ([]byte, error) {
	var out []any
	for bit := Facts(1); bit != 0; bit <<= 1 {
		if Facts(f)&bit == 0 {
			continue
		}
		if codes := bit.codes(); len(codes) == 1 {
			out = append(out, codes[0])
		} else {
			out = append(out, int(bit))
		}
	}
	return json.Marshal(out)
}

func (f *factNames) UnmarshalJSON(b []byte) error {
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return err
	}
	*f = 0
	for _, it := range items {
		bit, err := factBit(it)
		if err != nil {
			return err
		}
		*f |= factNames(bit)
	}
	return nil
}

// factBit reads one fact: a code, or the value of a bit without one.
func factBit(b []byte) (Facts, error) {
	var code Code
	if json.Unmarshal(b, &code) == nil {
		for bit := Facts(1); bit != 0; bit <<= 1 {
			if codes := bit.codes(); len(codes) == 1 && codes[0] == code {
				return bit, nil
			}
		}
		return 0, fmt.Errorf("unknown fact %q", code)
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return 0, err
	}
	bit := Facts(n)
	if n <= 0 || n > 255 || bit&(bit-1) != 0 || len(bit.codes()) != 0 {
		return 0, fmt.Errorf("%d is not a fact without a name", n)
	}
	return bit, nil
}

// hexHash is a ContentHash in hex.
type hexHash ContentHash

func (h hexHash) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(h[:])) }
func (h *hexHash) UnmarshalJSON(b []byte) error {
	var v hexBytes
	if err := v.UnmarshalJSON(b); err != nil {
		return err
	}
	if len(v) != len(h) {
		return errors.New("a hash is 16 bytes")
	}
	copy(h[:], v)
	return nil
}

// hexBytes are bytes in hex.
type hexBytes string

func (h hexBytes) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString([]byte(h))) }
func (h *hexBytes) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := hex.DecodeString(s)
	if err != nil {
		return err
	}
	if hex.EncodeToString(v) != s {
		return errors.New("hex in upper case")
	}
	*h = hexBytes(v)
	return nil
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
