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
// Budget is the token count a prune brings the Context down to; Trigger
// (zero: the Budget) is the count above which a check prunes at all.
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
// so that later checks neither walk nor retry it; a guard without a store
// or summarizer sweeps the units before asking its policy, so that a
// check that finds no safe way costs about a judgement per unit (see
// [Guard.Check]). With Hoard set the
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
// it out, or is refused, as [Plan.Split] says. Pinned messages stay, and
// so does what the model has not read yet ([Context.Unread],
// [CodeUnread]). Deferral is a state of its own, a [*DeferredError]; past
// the hard ceiling ([Config.Ceiling], or a [Guard]'s) it becomes a
// [*CeilingError].
//
// Evict-or-tombstone ([ErrSchema]). A tool's schema may leave the prompt
// only when no arguments of earlier calls to the tool stay, or behind a
// one-line [Tombstone] that tells the model to ask for the schema back.
// A compression that loses a constraint, or rejects arguments that stay,
// counts as dropping the schema ([LossyCompression]). A mutation tool
// that cannot be tombstoned keeps its schema. A message that requires a
// schema ([Message.Requires]) keeps it. When the model calls a tool whose
// schema had left, the next decision tombstones it, or every Prune
// refuses ([CodeGhostTool]) until the schema is back or the arguments go.
// [Context.RequestTool] records the model asking for a tombstoned tool.
//
// Regenerability ([ErrRegen]). Only reconstructible content may go, or
// content spilled to a durable store behind a pointer the configured
// [Resolver] resolves, or content no step of a sealed plan needs. Text a
// person or the model wrote is irreducible unless tagged otherwise: by
// [Message.Class], an [Oracle], or [Config.TextClass]. Unless a tool's
// [Tool.Output] says otherwise, only a pure tool's results (read-only and
// closed-world by its MCP [Annotations]) are reconstructible, and a
// read-only result goes stale once a mutating call of an overlapping
// [Tool.Scope] is made ([Tool.ScopeArgs] narrows that to paths). [Facts]
// make any message irreducible. An [Oracle] or a [Message.Class] decides a
// message's class in place of that derivation, but never lifts Facts,
// planned-step references, the resolvable pointer a [Durable] class needs,
// or anything of the commit boundary. An Oracle, which judges every
// message alike, does not lift the results of a tool annotated destructive
// or not idempotent (MCP's defaults for a tool that is not read-only)
// either: only that tool's [Tool.Output], or that message's own Class,
// may.
//
// A [Guard]'s [Screen] may refuse a decision for rules beyond the gates
// (a provider's, in package wire); its refusals name [GateScreen].
//
// Calls that will never be answered are given up with [Context.Abandon].
// [Context.Apply] refuses a decision that events since have made stale,
// or whose pointers stopped resolving ([*StaleError]). [Context.Save] and
// [Restore] carry a session to another process, where Prune and the
// guards decide as they would have.
//
// # Compaction
//
// A plan may replace a run of whole units with one message ([Summary]),
// judged by the gates as an eviction of the run that must carry the
// run's facts verbatim or the pointers to them. A [Guard] with a
// [Summarizer] compacts before it evicts; [Digest] is the built-in one,
// with no model. [Context.Brief] says what a summary must carry.
//
// # Diagnostics
//
// Every [Decision] keeps [Decision.Records], an audit line per evicted or
// stubbed message. A result fetched again after it was pruned queues a
// [RefetchAlert] ([Context.TakeAlerts]). [ToolState] counts what pruning
// made the model redo: schemas asked back, ghost calls, refetches, and
// the ghost-tool triad whose evidence [Context.Ghosts] keeps.
//
// # Token counts
//
// Messages carry the token counts the runtime gives. With
// [Config.Counter] set ([ApproxCounter], or a real tokenizer such as
// those of package tokenizer), the Context counts what it is given no
// count for, and the tool schemas and tombstones in the prompt.
// [Config.PointerTokens] counts the pointer text shown for spilled
// content.
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
// [Guard.Check] under its trigger take constant time and do not
// allocate (a check with a Logger allocates only to log refetch alerts
// or schemas asked back that are waiting). [Context.Prune] costs time in
// proportion to the plan and the units it touches, and [Guard.Check]
// over the trigger in proportion to what its policy walks, proposes and
// prunes, not to the length of the Context. A Context keeps at most 128
// bytes per message at a million messages beyond the ids, contents and
// arguments it was given, and reclaims the memory of messages that
// leave.
//
// The reference (every rule, code and cost) is in the docs folder of the
// repository: docs/gates.md, docs/guard.md, docs/compaction.md,
// docs/spilling.md, docs/logging.md.
package pruneguard
