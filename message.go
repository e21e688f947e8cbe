package pruneguard

import "encoding/json"

// MessageID names one message of a [Context]. IDs are chosen by the runtime
// and must be unique among the messages the Context holds.
//
// The zero MessageID, empty, is refused wherever an id is required.
type MessageID string

// CallID is the id a model gave one tool call (OpenAI's tool_call_id,
// Anthropic's tool_use id, and so on). A call id may be reused after the
// call it named has been answered; two unanswered calls may not share one.
//
// The zero CallID, empty, is refused wherever an id is required.
type CallID string

// UnitID names a unit: the ID of the earliest message in it.
//
// The zero UnitID, empty, names no unit.
type UnitID string

// StepID names a planned step of the runtime's task plan that has declared
// which messages it will read (see [Context.PlanStep]).
//
// The zero StepID, empty, is refused wherever an id is required.
type StepID string

// Role is the author of a message. The guard treats roles as opaque labels
// except for [RoleUser], whose unmarked messages are ordinary conversation,
// and the model's own roles, [RoleAssistant] and [RoleReasoning]: the
// messages after the model's last message (one of those roles, or one
// that makes calls) are unread, and the gates keep them until its next
// one ([Context.Unread]). A Context with no message of the model has
// shown the model nothing, and prunes nothing.
//
// The zero Role, empty, is a label like any other.
type Role string

// The roles runtimes use. Any other string is accepted as a role.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
	RoleReasoning Role = "reasoning"
)

// Call is one tool call emitted by an assistant message.
//
// The zero Call has no ID, which Append refuses.
type Call struct {
	// ID is the provider's call id; results name it in Message.Answers.
	ID CallID
	// Tool is the name of the tool called.
	Tool string
	// Args holds the call's JSON arguments. The guard never parses them; it
	// only knows that they stay in the prompt while the message does.
	Args json.RawMessage
	// Server says the provider ran the call itself and its result is
	// inside the same message (Anthropic's server_tool_use beside its
	// web_search_tool_result, a Responses web_search_call). Such a call
	// is never pending and is answered by no other message: a result
	// naming it is refused as [ErrDuplicateResult]. Its result is part of
	// the message, so the message's class includes the class of the
	// tool's results (a web search is open-world: irreducible unless the
	// tool is annotated otherwise). It is a use of the tool's name in the
	// prompt like any call (the registry knows the tool from it,
	// [Entry.Tools] and [Message.Calls] list it, it counts in
	// [ToolState.GhostCalls] and [ToolState.Refetches]) but not an
	// argument residency: it does not count in [ToolState.Args], and the
	// evict-or-tombstone gate does not hold the tool's schema for it,
	// since the model's arguments were checked by the provider, not
	// against a schema the prompt carries.
	Server bool
}

// Message is one entry of the transcript as the runtime hands it to a
// [Context]. The Context copies what it keeps; the caller may reuse m.
//
// The zero Message has no ID, which Append refuses.
type Message struct {
	// ID is unique within the Context. Required.
	ID MessageID
	// Role is the author of the message.
	Role Role
	// Tokens is the message's size as the runtime's tokenizer counts it.
	// It must not be negative.
	Tokens int
	// Content is opaque to the guard. A streamed message grows by chunks.
	Content []byte
	// Calls are the tool calls this message emits. All calls of one message
	// are a parallel batch and belong to one unit with all their results.
	Calls []Call
	// Answers lists the calls this message carries results for. Each must
	// name a call the Context holds and that has no result yet.
	Answers []CallID
	// Pinned messages are never pruned, nor is any unit holding one.
	Pinned bool
	// Class, when set, is the message's regenerability class, in place of
	// the class the guard would derive (from tool annotations, scope
	// staleness and Config.TextClass) and of any [Oracle]'s answer. Like
	// an Oracle it cannot lift [Facts] (they make the message irreducible),
	// planned-step references, the pointer a [Durable] message needs to
	// leave, or anything of the commit boundary. Unlike an Oracle, it may
	// lift the result of a tool with side effects
	// ([Annotations.SideEffects]): it is a choice made for this one
	// message. A value beyond [Irreducible] counts as Irreducible.
	Class Class
	// Facts marks what makes the content impossible to obtain again.
	Facts Facts
	// Pointer, when set, says where the content was spilled durably.
	Pointer Pointer
	// NeededBy names planned steps that will read this message, as if
	// [Context.PlanStep] were called for each in the same event, so that
	// no prune can slip in between.
	NeededBy []StepID
	// Requires names tools whose schema must stay in the prompt while the
	// message does: a provider refuses the message without it (Anthropic
	// rejects a tool_reference block naming a tool that is not in its
	// tools). The evict-or-tombstone gate refuses to withdraw such a
	// schema, or to compress it with losses, while a message requiring it
	// stays; a decision that evicts or stubs the last of them may
	// withdraw the schema. A stub replaces the content, and with it the
	// requirement. A name given twice counts once.
	Requires []string
	// IsError says the message reports a failed call (a tool result with
	// is_error, a validation error). The ghost-tool detector reads the
	// error of a call made while its tool's schema was missing for the
	// fields of that schema it names (see [GhostEvidence]).
	IsError bool
}

// Entry describes one message of a [Context] for a salience [Policy]. It is
// a snapshot: later events do not change it.
//
// The zero Entry describes no message.
type Entry struct {
	ID      MessageID
	Role    Role
	Tokens  int
	Unit    UnitID
	Tools   []string // tools called by the message, or answered by it
	Calls   int      // number of calls the message emits
	Result  bool     // the message answers at least one call
	Pinned  bool
	Open    bool // the message is still streaming
	Pending bool // its unit has a call without a complete result
	Stubbed bool // its content was replaced by a stub
	// Unread says its unit holds a message the model has not read yet
	// (see [Unit.Unread]): nothing of the unit may be pruned now.
	Unread bool
}

// Unit describes one unit of a [Context]: the messages tied together by
// calls, their results, parallel batches and explicit coupling.
//
// The zero Unit describes no unit.
type Unit struct {
	ID       UnitID
	Messages []MessageID // in transcript order
	Pending  []CallID    // calls still waiting for a complete result
	Open     bool        // some message of the unit is still streaming
	Pinned   bool
	// Unread says a message of the unit came after the model's last
	// message (see [Context.Unread]): the model has not read it yet, and
	// the unit stays, as one in flight does, until the model's next
	// message.
	Unread bool
	Tokens int
}
