package pruneguard

import (
	"context"
	"slices"
)

// Class is the regenerability class of a message: whether its content can
// be obtained again once it leaves the prompt.
//
// The zero Class is ClassUnset.
type Class uint8

// The classes. The zero Class means "not set": the guard derives one.
const (
	ClassUnset Class = iota
	// Reconstructible content can be produced again byte for byte: the
	// output of a pure, closed-world tool, a file the agent can re-read.
	Reconstructible
	// Durable content was written to a store the agent can read back; it
	// may go only while its [Pointer] resolves.
	Durable
	// Irreducible content cannot be obtained again. It is never evicted
	// unless it was spilled behind a resolvable pointer, or the runtime's
	// closed plan proves no remaining step needs it.
	Irreducible
)

// String returns the name of the class.
func (k Class) String() string {
	switch k {
	case ClassUnset:
		return "unset"
	case Reconstructible:
		return "reconstructible"
	case Durable:
		return "durable"
	case Irreducible:
		return "irreducible"
	}
	return "class(?)"
}

// Facts marks what a message records that no re-run can give back. Any
// fact makes the message irreducible, whatever its [Class] says and
// whatever an [Oracle] answers.
//
// The zero Facts mark nothing.
type Facts uint8

// The facts the regenerability gate knows.
const (
	// NegativeResult: the message records that a check came out negative
	// ("ulimit is unlimited, so the shell is not the cause"). Re-running
	// the check later may answer otherwise.
	NegativeResult Facts = 1 << iota
	// TransientState: an observation of state that cannot be observed
	// again (a PID, a timestamp, a memory reading, a race's outcome).
	TransientState
	// OneTimeSecret: a credential, nonce or token that is shown once.
	OneTimeSecret
	// UserConstraint: the sole record of a constraint, credential or
	// preference the user gave once.
	UserConstraint
)

// codes returns the violation codes of the facts set in f, in a fixed order.
func (f Facts) codes() []Code {
	var out []Code
	if f&NegativeResult != 0 {
		out = append(out, CodeNegative)
	}
	if f&TransientState != 0 {
		out = append(out, CodeTransient)
	}
	if f&OneTimeSecret != 0 {
		out = append(out, CodeSecret)
	}
	if f&UserConstraint != 0 {
		out = append(out, CodeUserConstraint)
	}
	return out
}

// reasons returns the codes of the violations that hold a message marked
// with facts f, which are not zero: the codes of its facts, or
// CodeIrreducible when it holds only bits no fact names (any fact makes a
// message irreducible).
func (f Facts) reasons() []Code {
	if codes := f.codes(); len(codes) > 0 {
		return codes
	}
	return []Code{CodeIrreducible}
}

// Pointer says where a message's content was spilled. The zero Pointer
// means "not spilled".
type Pointer struct {
	Store string // which store, e.g. "scratch" or "s3"
	Key   string // the key within it
}

// IsZero reports whether p is the zero Pointer.
func (p Pointer) IsZero() bool { return p == Pointer{} }

// Resolver tells whether a pointer still leads to the spilled content. The
// gates call it during [Context.Prune] for each candidate that carries a
// pointer, and again in [Context.Apply] for each pointer the decision
// relies on (a message whose eviction or stub only its pointer allowed),
// while they hold the Context's lock. So it answers from memory (an index
// the runtime keeps) and does no I/O: a pointer it does not know answers
// false, and is checked against the store beforehand, outside the lock
// (see [Verifier]). It must not call back into the Context. A pointer
// counts only when a Resolver is configured and answers true.
//
// A nil Resolver (the zero Config's) resolves nothing: no pointer counts.
type Resolver interface {
	Resolvable(p Pointer) bool
}

// Verifier is a [Resolver] that can check a pointer it does not know
// against its store, so that Resolvable answers true for it from then
// on. [RestoreContext] calls Verify, with its context and no lock held,
// for each distinct pointer of the state it restores that Resolvable
// does not resolve yet. The package
// spill's Spiller is one.
type Verifier interface {
	Resolver
	// Verify reads what p leads to and checks it: nil when p resolves,
	// an error otherwise. ctx governs the I/O.
	Verify(ctx context.Context, p Pointer) error
}

// ResolverFunc adapts a function to a [Resolver].
//
// A nil ResolverFunc must not be used: calling it panics.
type ResolverFunc func(Pointer) bool

// Resolvable calls f(p).
func (f ResolverFunc) Resolvable(p Pointer) bool { return f(p) }

// Oracle classifies messages for the regenerability gate. It is consulted
// for each message with no explicit [Message.Class], and its answer is the
// message's class in place of the class the guard would derive (from tool
// annotations, scope staleness and Config.TextClass); answering
// [ClassUnset] keeps the derived class, and a value beyond [Irreducible]
// counts as Irreducible.
//
// What an Oracle (or a Message.Class) can never lift: [Facts] (a message
// with any fact is irreducible, whatever it answers), planned-step
// references ([Context.PlanStep]: a message a pending step names never
// goes), the pointer a [Durable] class needs (a Durable message without a
// pointer the [Resolver] resolves is refused with [CodePointerLost]), and
// anything of the commit boundary (pending calls, streaming messages,
// pinned messages and whole units are not its to judge).
//
// What an Oracle alone cannot lift either: the MCP hints that a result
// records a side effect. A message that answers or makes a call to a
// tool annotated destructive, or not idempotent ([Annotations.SideEffects];
// MCP's defaults for any tool that is not read-only), stays irreducible
// whatever the Oracle answers, unless the tool's own [Tool.Output] sets
// its results' class. An Oracle is one judgement for every message; only
// a choice made for that tool (Tool.Output) or for that message
// ([Message.Class]) may say that the record of a side effect can be
// obtained again.
//
// The message passed is a copy whose slices must not be modified. An
// Oracle must not call back into the Context.
//
// A nil Oracle (the zero Config's) leaves classification to the guard's
// derivation.
type Oracle interface {
	Classify(m Message) Class
}

// OracleFunc adapts a function to an [Oracle].
//
// A nil OracleFunc must not be used: calling it panics.
type OracleFunc func(Message) Class

// Classify calls f(m).
func (f OracleFunc) Classify(m Message) Class { return f(m) }

// ClassOf reports the regenerability class the guard gives message id
// now: [Irreducible] if the message carries [Facts]; otherwise its
// explicit class, or the [Oracle]'s answer (never below Irreducible for
// a message that answers or makes a call to a tool with side effects
// whose Tool.Output is unset: see [Oracle]), or the derived one. The
// derived class of a message is the most conservative of:
//
//   - the class of the results of each call it answers;
//   - the class of the results of each call it emits, [Call.Server] calls
//     included (their results are inside the message): an assistant
//     message of tool calls with no Content of its own takes the class of
//     what it calls, so a unit of pure calls and their results is
//     reconstructible as a whole;
//   - Config.TextClass, [Irreducible] by default, for text a person or the
//     model wrote: a message that answers no call and carries Content, or
//     carries neither calls nor Content.
//
// The class of a call's results is its tool's [Tool.OutputClass], raised
// to Irreducible for a read-only tool once a mutating call of an
// overlapping [Tool.Scope] (that touched an overlapping path, when both
// name theirs by [Tool.ScopeArgs]) was made after the call, or in the same batch:
// precisely, at or after the first call of the batch, so that a call a
// streaming message gives at [Context.Close] counts any mutating call
// made while it streamed. A mutating call counts from the moment it is
// made, answered or not, and after it leaves the prompt. Whether a tool
// mutates, and its scope, are read from the registry as it is now. The
// class may change as calls are made or tools registered.
func (c *Context) ClassOf(id MessageID) (Class, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.find(id)
	if !ok {
		return ClassUnset, false
	}
	return c.classify(p), true
}

// classify returns the effective class of message p.
func (c *Context) classify(p int32) Class {
	x := c.msg(p)
	if x.facts != 0 {
		return Irreducible
	}
	if x.class != ClassUnset {
		return norm(x.class)
	}
	if c.cfg.Oracle != nil {
		if k := c.cfg.Oracle.Classify(c.copy(p)); k != ClassUnset {
			return max(norm(k), c.hinted(p))
		}
	}
	return c.derive(p)
}

// hinted returns the class an Oracle cannot lift message p below:
// Irreducible when p answers or makes a call (a server call's result
// included) to a tool whose MCP hints say its result records a side
// effect (see [Annotations.SideEffects]) and whose [Tool.Output] is not
// set; ClassUnset otherwise.
func (c *Context) hinted(p int32) Class {
	for _, walk := range [2]func(func(int32) bool){c.answersOf(p), c.callsOf(p)} {
		for k := range walk {
			if t := &c.tools[c.call(k).tool].t; t.Output == ClassUnset && t.Annotations.SideEffects() {
				return Irreducible
			}
		}
	}
	return ClassUnset
}

// derive returns the class of message p from its calls, its answers and
// its text, as ClassOf describes.
func (c *Context) derive(p int32) Class {
	x := c.msg(p)
	k := ClassUnset
	for a := range c.answersOf(p) {
		k = max(k, c.callClass(a))
	}
	for a := range c.callsOf(p) {
		k = max(k, c.callClass(a))
	}
	if x.ans == none && (x.call == none || len(c.content(p)) > 0) {
		text := c.cfg.TextClass
		if text == ClassUnset {
			text = Irreducible
		}
		k = max(k, norm(text))
	}
	return k
}

// regenGate checks every message that would leave the prompt: each
// member of the closing set, a unit at a time, and each stub target. In
// RegenRefuse an unsafe one refuses the plan; in RegenDropUnsafe its unit,
// or its stub, is left out, but for a summary's run, which goes whole or
// not at all: a unit left out would stay inside it, or leave it empty. A
// unit's unsafe messages make one violation per reason (code), naming them
// all; a message a planned step names makes one of its own, with the steps.
func (r *pruneRun) regenGate() {
	c := r.c
	drop := c.cfg.Regen == RegenDropUnsafe && r.sum == nil
	var unsafe []int32
	var uv []*Violation // the unit's, reused: the gate copies them out
	var at []codeAt     // the unit's unsafe messages and why, reused
	t := r.pass()
	for _, first := range r.evict {
		u := c.msg(first).unit
		if un := c.unit(u); un.mark == t {
			continue
		} else {
			un.mark = t
		}
		uv, at = uv[:0], at[:0]
		for p := range c.members(u) {
			if r.has(p, kEvict) {
				if r.sum != nil {
					uv = r.regenCheck(uv, p)
				} else {
					at = r.unsafeCodes(at, p)
				}
			}
		}
		uv = r.vs.unit(r, uv, at)
		if len(uv) == 0 {
			continue
		}
		if drop {
			unsafe = append(unsafe, u)
			r.leaveOut(uv...)
		} else {
			r.object(uv...)
		}
	}
	r.dropUnits(unsafe)
	r.stubs = slices.DeleteFunc(r.stubs, func(p int32) bool {
		sv := r.regenCheck(nil, p)
		switch {
		case len(sv) == 0:
			return false
		case drop:
			r.leaveOut(sv...)
			r.unset(p, kStub)
			return true
		}
		r.object(sv...)
		return false
	})
}

// regenCheck appends to dst the violations of the regenerability gate for
// one message, none when it may leave the prompt.
func (r *pruneRun) regenCheck(dst []*Violation, p int32) []*Violation {
	if r.sum != nil {
		return append(dst, r.summaryCheck(p)...)
	}
	var at [4]codeAt
	return r.vs.unit(r, dst, r.unsafeCodes(at[:0], p))
}

// codeAt is why the regenerability gate holds message p.
type codeAt struct {
	code Code
	p    int32
}

// unsafeCodes appends to dst why message p may not leave the prompt:
// nothing when it may.
func (r *pruneRun) unsafeCodes(dst []codeAt, p int32) []codeAt {
	c := r.c
	// A planned step that names the message holds it, whatever else.
	if c.refs(p) > 0 {
		return append(dst, codeAt{CodeReferenced, p})
	}
	if c.sealed {
		return dst // condition 3: closed plan, and no remaining step needs it
	}
	k := r.classOf(p)
	if k == Reconstructible {
		return dst
	}
	if c.resolvable(c.pointer(p)) {
		r.relied = append(r.relied, p)
		return dst // condition 2: durable spill with a live pointer
	}
	if f := c.msg(p).facts; f != 0 {
		for _, code := range f.reasons() {
			dst = append(dst, codeAt{code, p})
		}
		return dst
	}
	if k == Durable {
		return append(dst, codeAt{CodePointerLost, p})
	}
	return append(dst, codeAt{CodeIrreducible, p})
}

func (c *Context) resolvable(p Pointer) bool {
	return !p.IsZero() && c.cfg.Resolver != nil && c.cfg.Resolver.Resolvable(p)
}
