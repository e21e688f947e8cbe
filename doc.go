// Package pruneguard guards an LLM agent runtime's context window against
// unsafe pruning. A salience policy proposes what to evict; the guard
// disposes: it returns either the closed set that may safely go, or a
// typed error saying which gate refused and why.
//
// The package does no I/O, reads no clock and draws no random numbers.
// Stores, loggers, tokenizers and provider wire formats live at the
// edges, behind the small [Resolver], [Oracle], [Counter], [Spiller] and
// [Screen] interfaces, a *slog.Logger, or in other packages (see package
// wire for provider request bodies, package spill for stores).
//
// # Tour
//
// A [Context] is the live transcript of one session. The runtime feeds it
// the events that really happen:
//
//	c := pruneguard.NewContext(pruneguard.Config{})
//	closed := pruneguard.Annotations{ReadOnlyHint: pruneguard.Bool(true), OpenWorldHint: pruneguard.Bool(false)}
//	c.RegisterTool(pruneguard.Tool{Name: "read_file", Annotations: closed})
//	c.RegisterTool(pruneguard.Tool{Name: "grep", Annotations: closed})
//	c.Append(pruneguard.Message{ID: "sys", Role: pruneguard.RoleSystem, Tokens: 900, Pinned: true})
//	c.Append(pruneguard.Message{ID: "a1", Role: pruneguard.RoleAssistant, Tokens: 60,
//		Calls: []pruneguard.Call{{ID: "c1", Tool: "read_file"}, {ID: "c2", Tool: "grep"}}})
//	c.Append(pruneguard.Message{ID: "r1", Role: pruneguard.RoleTool, Tokens: 4000, Answers: []pruneguard.CallID{"c1"}})
//	c.Open(pruneguard.Message{ID: "r2", Role: pruneguard.RoleTool, Answers: []pruneguard.CallID{"c2"}})
//	c.Write("r2", chunk, 120) // results stream in, from any goroutine
//	c.Close("r2")
//	c.Append(pruneguard.Message{ID: "a2", Role: pruneguard.RoleAssistant, Tokens: 80}) // the model read r1, r2
//
// Messages are grouped into units without being told: a call and its
// results are one unit, and every call of one assistant message, with all
// their results, is one unit. [Context.Couple] adds other ties (a
// reasoning item and the calls after it). Before each model call the
// runtime asks whether to prune:
//
//	d, err := c.Prune(pruneguard.Plan{Evict: []pruneguard.MessageID{"r1"}})
//	if err == nil {
//		err = c.Apply(d) // d.Evict is {"a1", "r1", "r2"}: the whole unit
//	}
//
// Without the model's answer a2, the same plan evicts nothing: r1 and r2
// would come after the model's last message, unread, and what the model
// has not read never goes (see [Context.Unread]).
//
// [Context.Prune] changes nothing; [Context.Apply] carries a decision out
// atomically, and refuses one that events since have made stale. The
// [Guard] helper wraps the loop: check the budget in constant time, ask a
// [Policy], prune, apply, and answer under budget, pruned, deferred, or a
// [*CeilingError]:
//
//	g := pruneguard.Guard{Budget: 32000, Policy: pruneguard.OldestFirst{}}
//	res, err := g.Check(c) // before each model call
//
// A Guard is meant to be left on. [Guard.Validate] and [Config.Validate]
// refuse what makes no sense (a guard with no budget, a ceiling below
// the budget, a blank stub text, an enum out of range) with a
// [*ConfigError], and Check validates first and changes nothing then.
// Trigger and MinClear keep a provider's prompt cache: a check prunes
// only above the trigger, then down to the budget and by at least
// MinClear, so consecutive requests share their prefix between prunes.
// When the policy can make no more room, the guard goes on with the
// furthest safe prune (whole units, oldest first, what the policy keeps
// last), and with a Spill store it writes content that cannot be
// obtained again to the store, records the pointer and lets it go. The
// spills are a check's only I/O: [Guard.CheckContext] makes them with
// its context, and with no lock of the Context held.
//
//	sp := &spill.Spiller{Store: &spill.Memory{}}
//	c := pruneguard.NewContext(pruneguard.Config{Resolver: sp})
//	g := pruneguard.Guard{Budget: 32000, Trigger: 40000, MinClear: 8000, Spill: sp, Logger: slog.Default()}
//	res, err := g.CheckContext(ctx, c)
//
// What the gates refuse is remembered in the Context ([Context.Refusals])
// so that later checks neither walk nor retry it. With Hoard set the
// guard also stubs or evicts the large reconstructible messages that
// Config.HoardTokens reports, under budget too. A Screen vets each
// decision for rules beyond the gates (a provider's). The Logger gets
// one record per decision, refusal, spill, refetch alert and schema the
// model asked back ([Context.RequestTool]), and one per check, with ids,
// codes, classes and token counts but never content; the
// records of a check map onto the Agent Client Protocol's compaction
// events (see [LogDecision]).
//
// # Policies
//
// A [Policy] proposes; it never decides. It gets a [View] of the Context:
// walks over the units oldest first ([View.Units]), the messages newest
// first ([View.Newest]), the tool results newest first ([View.Results],
// [View.WholeResults]) and largest first ([View.Largest]), each kept in
// an index as messages arrive, are stubbed or leave, so that a policy
// that stops once it has proposed enough costs what it proposes, however
// long the session. The built-in [OldestFirst], [LargestResultsFirst]
// and [KeepLastToolUses] do so. [PolicyFunc] takes the simple way, a
// snapshot of every message; [ViewFunc] combines walks and policies:
//
//	pol := pruneguard.ViewFunc(func(v *pruneguard.View, need int) pruneguard.Plan {
//		p := pruneguard.LargestResultsFirst{Stub: true}.Propose(v, need)
//		if p.Empty() {
//			p = pruneguard.OldestFirst{}.Propose(v, need)
//		}
//		return p
//	})
//
// # The gates
//
// Commit boundary ([ErrBoundary], [ErrDeferred]). Nothing is pruned while a
// call is pending or a message is streaming ([BoundaryStrict], the
// default), or, in [BoundaryRelaxed], no unit that is in flight is pruned.
// A plan naming part of a unit grows to the whole unit, shrinks to leave
// it out, or is refused, as [Plan.Split] says. Pinned messages stay. In
// both modes a unit holding a message the model has not read yet (one
// after its last message, [Context.Unread]) is held back as a unit in
// flight is ([CodeUnread]): a result goes only once a request has shown
// it to the model. A [Guard] that cannot reach its budget without it ends
// Deferred, or with a [*CeilingError] past the ceiling; it never evicts,
// stubs or spills it.
// Deferral is a state of its own, reported as a [*DeferredError]; past the
// hard ceiling ([Config.Ceiling], or a [Guard]'s) it becomes a
// [*CeilingError].
//
// Evict-or-tombstone ([ErrSchema]). A tool's schema may leave the prompt
// only when no arguments of earlier calls to the tool stay, or behind a
// one-line [Tombstone] that tells the model to ask for the schema back.
// A compression that loses a constraint counts as dropping the schema,
// and so does one that narrows it so that arguments of calls that stay
// are invalid under it, or may be ([LossyCompression]); a narrowing no
// surviving argument contradicts is reported in [Decision.Narrowed].
// A mutation tool that cannot be tombstoned keeps its schema; a read-only
// one may lose it, as it fails closed. The gate runs once the other gates
// have settled what leaves, so schemas are decided on the arguments that
// really leave, in the same decision: a plan that evicts a tool's last
// arguments may drop its schema without a tombstone, and a decision that
// takes the last arguments of a tombstoned tool retires its tombstone
// ([Decision.Retire]). A message that requires a schema
// ([Message.Requires], as Anthropic's tool_reference blocks do) keeps it,
// tombstone or not ([CodeRequiredTool]), until a decision evicts or stubs
// the last such message.
//
// The gate looks at every tool at every decision, not only at those a
// plan names. When arguments come to stand behind no schema without a
// plan (the model called a tool whose schema had left: a ghost call), the
// next decision adds a tombstone for the tool, even a decision of an
// empty plan; for a mutation tool that cannot be tombstoned, every Prune
// refuses ([CodeGhostTool]) until a plan evicts those arguments or
// [Context.RequestTool] brings the schema back. A message requiring a
// schema the prompt does not show whole refuses every Prune the same way.
// [Context.Unsound] lists such tools; a decision made before one arose is
// stale. The Context keeps that list as events happen, so a decision
// costs in proportion to it. [Context.RequestTool] records the model
// asking for a tombstoned tool, the signal that pruning is too
// aggressive.
//
// Regenerability ([ErrRegen]). Only reconstructible content may go, or
// content spilled to a durable store behind a pointer the configured
// [Resolver] resolves, or content no step of a sealed plan needs. Text a
// person or the model wrote (user and system messages, assistant prose,
// reasoning) is irreducible unless tagged otherwise: by [Message.Class], an
// [Oracle], or [Config.TextClass] for a runtime that accepts losing text.
// Unless a tool's [Tool.Output] says otherwise, only a pure tool's results
// are reconstructible: read-only and closed-world by its MCP
// [Annotations]; a mutating tool's results, even an idempotent one's, and
// an open-world tool's are irreducible. A read-only tool's result goes
// stale, and irreducible, once a mutating call whose [Tool.Scope]
// overlaps its tool's (equal scopes, or either empty) is made after it or
// in its parallel batch; with [Tool.ScopeArgs] naming the arguments that
// hold the path a call touches, only once a mutating call touches an
// overlapping path (the same, one inside the other). An assistant message
// of calls with no
// Content of its own takes the most conservative class of what it calls,
// so a unit of pure calls and their results goes whole; a [Call.Server]
// call, run by the provider with its result in the same message, adds its
// tool's class to its message. [Facts] (negative results, transient
// observations, one-time secrets, the sole record of a user's constraint)
// make any message irreducible; a message a pending planned step names
// ([Context.PlanStep]) never goes. An [Oracle] or a [Message.Class]
// decides a message's class in place of that derivation, but never lifts
// Facts, planned-step references, the resolvable pointer a [Durable] class
// needs, or anything of the commit boundary. An Oracle, which judges
// every message alike, does not lift the results of a tool annotated
// destructive or not idempotent (MCP's defaults for a tool that is not
// read-only) either: only that tool's [Tool.Output], or that message's
// own Class, may.
//
// Calls that will never be answered (an orphan deep in the history, a
// cancelled stream, a result the runtime lost) are given up with
// [Context.Abandon]: their unit closes and is judged like any other, and
// a late result for one is refused. A message still streaming cannot be
// spilled, and [Context.Apply] asks the Resolver again about every pointer
// its decision relies on, refusing with a [*StaleError] when one stopped
// resolving. [Context.Save] and [Restore] carry a session to another
// process, where Prune and the guards decide as they would have: the
// state is JSON that says what the session holds (messages, calls,
// tools, plan, what the Context remembers) by ids and names, and a
// Context restored saves it again byte for byte.
//
// # Diagnostics
//
// Every [Decision] keeps [Decision.Records], an audit line per evicted
// or stubbed message with the class it had and, for a tool result (a
// [Call.Server] call's result is the message that carries it), a
// [ContentHash] of its content. The Context remembers the results of the
// 4,096 calls pruned last by their signature (the tool, and the
// arguments as JSON with key order and white space aside). When a later
// call with a remembered signature gets its closed result, and no result
// of that signature is left in the prompt, it queues a [RefetchAlert]
// saying whether the content came back the same and what class the
// pruned result had, and forgets the pruned result; [Context.TakeAlerts]
// drains the queue. An irreducible result fetched again means a pointer
// was not followed or a gate was bypassed; a result that came back
// different means what was pruned could not be had again.
//
// [ToolState] counts what pruning made the model redo: re-expansion
// requests for tombstoned schemas, ghost calls to tools whose schema was
// not shown whole, refetches, and the legs of the ghost-tool triad, whose
// evidence [Context.Ghosts] keeps: a call rebuilt from an earlier call's
// arguments while the schema was missing, a validation error naming the
// schema's fields ([Message.IsError], [Context.ReportValidationError]),
// and a detour to a sibling tool ([Siblings]) before the model asked for
// the schema back. Package spill provides durable stores and a [Resolver]
// that lets irreducible content leave the prompt behind a verified
// pointer.
//
// # Token counts
//
// Messages carry the token counts the runtime gives. With
// [Config.Counter] set ([ApproxCounter], a quarter of the bytes, or a
// real tokenizer such as those of package tokenizer), the Context counts
// what it is given no count for (a message appended or opened with
// Tokens 0, a chunk written with 0 tokens), and the tool schemas in the
// prompt and the tombstones that stand count toward [Context.Tokens] and
// [Decision.Freed]. With [Config.PointerTokens] set, so does the pointer
// text the runtime shows for spilled content: a stubbed result that
// carries a pointer counts PointerTokens instead of the stub's, and each
// distinct pointer of the messages evicted counts PointerTokens once, for
// its line.
//
// # Errors
//
// A refused plan returns a [*PruneError] holding every [*Violation], in a
// stable order (gate, then transcript position, then code). Each
// violation matches its gate's sentinel with errors.Is and carries the
// unit, message, call and tool ids. Malformed events and plans return an
// [*InputError] matching [ErrInvalidInput] and a specific sentinel, and
// leave the Context unchanged.
//
// # Cost
//
// A [Context] is safe for concurrent use. [Context.Tokens] and
// [Guard.Check] under its trigger (with no hoarding to act on) take
// constant time and do not allocate, with or without a Logger, with one
// exception: a check with a Logger takes the refetch alerts waiting
// ([Context.TakeAlerts]) and the schemas asked back
// ([Context.RequestTool]) and logs them, which allocates; with none
// waiting it logs nothing and allocates nothing.
// [Context.Prune] costs time in proportion to the plan and the units it
// touches, and [Guard.Check] over the trigger in proportion to what its
// policy walks, proposes and prunes, not to the length of the Context nor
// to the refusals remembered from earlier checks (beside a logarithm for
// the indexes). The one part of a prune that grows with the bytes of
// what it takes, hashing the results for [Decision.Records], is shared
// among up to four goroutines (no more than GOMAXPROCS) once the results
// reach a few hundred kilobytes per goroutine; they end before Prune
// returns. With Config.HoardTokens set, the hoarding report of a
// prune and the hoarding rule of a check add time in proportion to the
// large messages that may be hoarded (see [HoardMode]), never to the rest
// of the Context. A Context keeps at most 128 bytes per message at a
// million messages (about 119 on a realistic session mix) beyond the ids,
// contents and arguments it was given, and reclaims the memory of the
// messages that leave, at the latest at the Apply after the one that
// removed them (see [Context.Apply]).
package pruneguard
