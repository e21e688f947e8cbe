package wire

import (
	"encoding/json"

	"github.com/pruneguard/pruneguard"
)

// provider is what the package knows of one wire dialect, as a table the
// shared code asks: how the history is read, how calls pair with results,
// the provider's rules, what a stub replaces, where the tools and the
// system prompt live and how messages are written. Each provider's table
// is in a file named after it (chat.go, responses.go, anthropic.go,
// gemini.go, bedrock.go), with its rules beside it (chat_rules.go, ...);
// [Dialect.provider] is the one place that chooses among them. A func
// said to be optional may be nil, when the provider has nothing to do at
// that step; TestProviderTables checks that every table sets the others.
// Where they run for every message or window, the funcs are handed
// values, or pointers into what is on the heap already (the reader's own
// facts, the tracker's own step, a body's messages), never a pointer to
// a caller's variable: what an indirect call is handed a pointer to is
// moved to the heap.
type provider struct {
	dialect Dialect

	// ---- how it reads

	// historyKey is the top-level key of the history: "messages",
	// "input" or "contents".
	historyKey string
	// entry names one entry of the history in errors: "message", "item"
	// or "content".
	entry string
	// stringHistory is set when the history may be a plain string, read
	// as one user message (a Responses input).
	stringHistory bool
	// readEntry reads the facts of one entry of the history.
	readEntry func(r *reader, f *facts, obj jobj) error
	// readTop reads the top-level facts the rules need into b
	// (optional).
	readTop func(b *Body) error

	// ---- how calls pair, and what goes in one unit

	// track pairs the results of the next message with earlier calls.
	track func(t *tracker, f *facts, keys []int32, s *step)
	// finish returns the calls the end of the history leaves unanswered
	// for good, and which of them to report (optional: none).
	finish func(t *tracker) (closed []int32, report func(key int32) bool)
	// userMessage reports a message of the user's side, by its role and
	// type.
	userMessage func(role, typ string) bool
	// coupled reports whether message f goes in one unit with prev, the
	// message before it, beyond the core's own grouping of calls and
	// results (optional: never).
	coupled func(prev, f *facts) bool

	// ---- its server: what it holds, where requests go

	// serverHeld is set when the history may refer to what the server
	// holds (Responses): item references and outputs answering calls it
	// holds are pinned.
	serverHeld bool
	// itemIDs is set when entries carry ids that name them (Responses
	// items): a session takes an item's id as its message id.
	itemIDs bool
	// pausedTurns is set when a final assistant turn may hold a server
	// tool call still waiting for its result (Anthropic pause_turn): the
	// turn goes back unchanged.
	pausedTurns bool
	// paths are the ends of the URL paths of the provider's requests
	// (see [RequestDialect]).
	paths []string

	// ---- its rules

	// emptyRule and emptyWording report an empty history: every provider
	// needs at least one message to answer.
	emptyRule, emptyWording string
	// validate adds the violations of the history rules found in ms.
	validate func(b *Body, ms []*facts, sc scope, v violations) violations
	// toolFields adds the violations of the tools arrays and tool choice,
	// which depend on the top-level fields alone, and reads into ts what
	// the history rules need of the tools array.
	toolFields func(b *Body, ts *toolState, v violations) violations
	// toolBlocks reports the tool blocks of message i of a body whose
	// tools array is empty; toolRefs the tools the tool references of
	// message i name and the tools array does not declare (optional: the
	// provider has no such rules).
	toolBlocks func(i int, v violations) violations
	toolRefs   func(ts *toolState, i int, names []string, v violations) violations

	// ---- how the rule screen checks an edit (see guard_rulescreen.go)

	// window is how far around edited messages the history rules read
	// (the zero shape: the message on each side).
	window windowShape
	// cleanWindows is set when a window's violations are those of the
	// whole body within it, so that the windows of a body that breaks no
	// rule need no check before an edit.
	cleanWindows bool
	// screenWhole reports an edit that changes a fact of the whole body
	// some rule depends on (globals gb before it, ga after), so that the
	// whole body is checked again (optional: none does).
	screenWhole func(b *Body, gb, ga globals, ts *toolState) bool
	// pairKeys returns the (call type, id) keys of the calls and outputs
	// of f, for a provider whose calls and outputs pair by kind and id
	// anywhere in the history (Responses; optional: the provider pairs
	// by position). The screen then checks them again with
	// screenKeyedPairs, by a direct call: what an indirect call is handed
	// (the screen's sets of edits) would be moved to the heap.
	pairKeys func(f *facts) [][2]string

	// ---- what a stub replaces

	// stub replaces, in the message obj, the content of every tool result
	// by text (textJSON is text encoded).
	stub func(obj map[string]json.RawMessage, text string, textJSON json.RawMessage) error

	// ---- where its tools live

	// toolLists are where the request declares tools, in order.
	toolLists []toolList
	// toolDecl finds the declaration in a tools entry: the member holding
	// it ("function", "toolSpec"; "" for the entry itself), the
	// declaration (nil for an entry that declares no tool by name) and
	// the key of its input schema ("" for a tool without one).
	toolDecl func(entry map[string]json.RawMessage) (inner string, decl map[string]json.RawMessage, schemaKey string)
	// schemaInJSON is set when the schema sits under "json" in its slot
	// (Bedrock's inputSchema).
	schemaInJSON bool

	// ---- where its system prompt lives (see body_prompt.go)

	// promptInHistory is set when the system prompt is the first system
	// or developer message of the history (Chat), not a top-level field.
	promptInHistory bool
	// promptKey returns the top-level key of the system prompt, given
	// the request's top-level fields (unset when promptInHistory is).
	promptKey func(fields map[string]json.RawMessage) string
	// hasPrompt reports whether a request's top-level fields (read with
	// field) hold a system prompt that lines can go into without adding
	// one; see promptPlace for the rule.
	hasPrompt func(field func(key string) json.RawMessage) bool
	// addPromptText returns the system prompt cur (nil when absent) with
	// text added after its own; ok is false when cur cannot take it.
	addPromptText func(cur json.RawMessage, text string) (json.RawMessage, bool)
	// systemPrompt writes the texts of system messages as the top-level
	// system prompt, for a provider whose history has no system role
	// (optional: system messages stay in the history).
	systemPrompt func(texts []string) json.RawMessage

	// ---- how it writes a Context's messages (Render, a session's events)

	// turns is set when the history is turns of content blocks, where
	// consecutive messages of one role make one turn (Anthropic, Gemini,
	// Bedrock); turnKey is the key of a turn's blocks, modelRole the role
	// of the model's turns.
	turns     bool
	turnKey   string
	modelRole string
	// writeEntries writes a message of role with text and calls as the
	// history's entries, for a provider without turns.
	writeEntries func(role, text string, calls []pruneguard.Call) []rpiece
	// textBlock and callBlock write text and a call as blocks of a turn,
	// for a provider with turns.
	textBlock func(text string) json.RawMessage
	callBlock func(c pruneguard.Call) json.RawMessage
	// writeResult writes the result of call id, of tool, with text: an
	// entry of its own, or, in a provider with turns, a block of the user
	// turn.
	writeResult func(id pruneguard.CallID, text, tool string) json.RawMessage
	// declare writes the declaration of a tool with its input schema.
	declare func(name string, schema json.RawMessage) json.RawMessage
	// eventKind returns the role and type a message of a Context takes
	// when written, given the role it takes in every provider (optional;
	// see eventFacts); callType and resultType are the types of its call
	// and result parts.
	eventKind            func(m pruneguard.Message, role string) (string, string)
	callType, resultType string

	// ---- how it writes a summary (see body_summary.go)

	// summary writes the message a compaction puts in the place of the
	// run it replaces: a user message holding the summary's text.
	summary func(text string) json.RawMessage
	// summaryJoins is set when a summary may not stand as a message of
	// its own after a user message (Bedrock: roles alternate, nothing is
	// merged): after one, its text goes into that message, as a text
	// block after its own blocks.
	summaryJoins bool

	// ---- what its results say (see modelText)

	// results calls add with the content of each tool result of the
	// message obj, as the model reads it (optional: the reader keeps
	// the results' text as text parts already, as Chat's does).
	results func(obj map[string]json.RawMessage, add func(json.RawMessage))
}
