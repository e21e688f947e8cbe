package wire

import (
	"encoding/json"
	"strings"
)

// Rule codes for OpenAI Responses.
const (
	// RuleResponsesCallWithoutOutput: a client call item (function_call,
	// custom_tool_call, computer_call, local_shell_call, shell_call,
	// apply_patch_call, a client tool_search_call) has no later output item
	// of its kind answering its id. An MCP approval request may stay
	// unanswered.
	RuleResponsesCallWithoutOutput = "openai-responses/call-without-output"
	// RuleResponsesOutputWithoutCall: an output item (or an MCP approval
	// response) has no earlier call item of its kind with the id it
	// answers. Not reported when previous_response_id, a conversation or
	// an item_reference is in the request: the call may be stored.
	RuleResponsesOutputWithoutCall = "openai-responses/output-without-call"
	// RuleResponsesReasoningWithoutFollower: a reasoning item is last or is
	// followed by another reasoning item or by a user message.
	RuleResponsesReasoningWithoutFollower = "openai-responses/reasoning-without-following-item"
	// RuleResponsesDuplicateItemID: two items share an id.
	RuleResponsesDuplicateItemID = "openai-responses/duplicate-item-id"
	// RuleResponsesReasoningNotPersisted: with "store": false a reasoning
	// item lacks encrypted_content, so the server cannot resolve it.
	RuleResponsesReasoningNotPersisted = "openai-responses/reasoning-not-persisted"
	// RuleResponsesPendingCalls: client call items at the end of the
	// input, after the last output item and the last user message, without
	// outputs.
	RuleResponsesPendingCalls = "openai-responses/pending-calls"
	// RuleResponsesEmptyInput: the input array is empty. The wording is
	// this package's own: no provider error for it is on record.
	RuleResponsesEmptyInput = "openai-responses/empty-input"
)

// Rule codes for the tools array and the tool choice. They concern the
// request outside its history, which a prune changes when it withdraws
// schemas; their violations carry index 0 unless a message is to blame.
const (
	// RuleResponsesUnknownToolChoice: tool_choice names a function the
	// tools array does not declare.
	RuleResponsesUnknownToolChoice = "openai-responses/unknown-tool-choice"
)

// validateResponses checks the items ms. The pairing of calls and outputs
// and the uniqueness of ids are checked only over a whole body (the screen
// keeps them by key); over a window only the rules of each item and of
// the item after a reasoning item are.
func validateResponses(b *Body, ms []*facts, sc scope, v *violations) {
	whole := sc.atStart && sc.atEnd
	if whole {
		responsesPairing(ms, sc, v)
	}
	for i, m := range ms {
		if m.typ != "reasoning" {
			continue
		}
		next := i + 1
		if (next >= len(ms) && sc.atEnd) || (next < len(ms) && (ms[next].typ == "reasoning" || isUserMessage(ms[next]))) {
			v.add(RuleResponsesReasoningWithoutFollower, sc.off+i,
				"Item '%s' of type 'reasoning' was provided without its required following item.", m.id)
		}
		if b.storeFalse && !signedReasoning(m) {
			v.add(RuleResponsesReasoningNotPersisted, sc.off+i,
				"Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", m.id)
		}
	}
}

// responsesPairing checks that item ids are unique and that calls and
// outputs pair, over the whole input ms.
func responsesPairing(ms []*facts, sc scope, v *violations) {
	type open struct {
		index int
		typ   string
		id    string
	}
	var order []open
	pending := map[[2]string][]int{} // (call type, id) -> positions in order, unanswered
	answered := map[int]bool{}       // positions in order that got an output
	seenIDs := map[string]bool{}
	for i, m := range ms {
		if m.id != "" {
			if seenIDs[m.id] {
				v.add(RuleResponsesDuplicateItemID, sc.off+i, "Duplicate item found with id %s.", m.id)
			}
			seenIDs[m.id] = true
		}
		for _, p := range m.parts {
			switch p.kind {
			case PartCall:
				k := [2]string{m.typ, p.id}
				pending[k] = append(pending[k], len(order))
				order = append(order, open{i, m.typ, p.id})
			case PartResult:
				out := responsesOutputs[p.typ]
				k := [2]string{out[0], p.id}
				q := pending[k]
				if len(q) == 0 {
					// With previous_response_id (or a conversation) the call
					// may be stored on the server.
					if !sc.continues {
						v.add(RuleResponsesOutputWithoutCall, sc.off+i, "No tool call found for %s with %s %s.", strings.ReplaceAll(p.typ, "_", " "), out[1], p.id)
					}
					continue
				}
				answered[q[0]] = true
				pending[k] = q[1:]
			}
		}
	}
	for k, o := range order {
		if answered[k] || o.typ == "mcp_approval_request" {
			continue // the user may leave an approval request unanswered
		}
		rule := RuleResponsesCallWithoutOutput
		if o.index > sc.barrier {
			rule = RuleResponsesPendingCalls
		}
		v.add(rule, sc.off+o.index, "No tool output found for %s %s.", strings.ReplaceAll(o.typ, "_", " "), o.id)
	}
}

// signedReasoning reports a signed reasoning part in m.
func signedReasoning(m *facts) bool {
	for _, p := range m.parts {
		if p.kind == PartReasoning && p.signed {
			return true
		}
	}
	return false
}

// responsesChoiceNames returns the functions a Responses tool_choice
// names: a function or custom tool, or those of an allowed_tools list.
// Hosted tools (by type) and MCP servers are not declared by name.
func responsesChoiceNames(choice json.RawMessage) []string {
	var names []string
	switch str(path(choice, "type")) {
	case "function", "custom":
		names = append(names, str(path(choice, "name")))
	case "allowed_tools":
		items, _ := asArray(path(choice, "tools"))
		for _, it := range items {
			if t := str(path(it, "type")); t == "function" || t == "custom" {
				names = append(names, str(path(it, "name")))
			}
		}
	}
	return names
}

// responsesToolFields checks that tool_choice names functions declared.
func responsesToolFields(b *Body, ts *toolState, v *violations) {
	for _, n := range unknownTools(ts.declared, responsesChoiceNames(b.field("tool_choice"))...) {
		v.add(RuleResponsesUnknownToolChoice, 0, "Invalid 'tool_choice': no tool named '%s' is declared in 'tools'.", n)
	}
}

// responsesKeys returns the (call type, id) keys of a Responses item's
// calls and outputs.
func responsesKeys(f *facts) [][2]string {
	var out [][2]string
	for _, p := range f.parts {
		switch p.kind {
		case PartCall:
			out = append(out, [2]string{f.typ, p.id})
		case PartResult:
			out = append(out, [2]string{responsesOutputs[p.typ][0], p.id})
		}
	}
	return out
}

// screenKeyedPairs returns, in view v, the violations of the Responses pairing and
// item ids for the kinds, ids and items the edits e touch.
func screenKeyedPairs(rs *ruleScreen, v view, e *edits, gl globals) []RuleViolation {
	var out violations
	keys := map[[2]string]bool{}
	ids := map[string]bool{}
	touched := func(i int32) {
		f := rs.at(i)
		for _, k := range responsesKeys(f) {
			keys[k] = true
		}
		if f.id != "" {
			ids[f.id] = true
		}
	}
	for _, i := range e.rm {
		touched(i)
	}
	if e.sub != nil {
		touched(e.sub.i) // what the message rewritten held leaves
	}
	continues := rs.b.continues || gl.itemRefs > 0
	for _, k := range sortedKeys(keys) {
		var queue []int32
		for _, i := range rs.byKey[k] {
			if v.isRemoved(i) {
				continue
			}
			f := rs.factsIn(v, i)
			if f.ncalls == 0 && f.nresults == 0 {
				continue // written as a summary, which pairs with nothing
			}
			if f.ncalls > 0 {
				queue = append(queue, i)
				continue
			}
			if len(queue) > 0 {
				queue = queue[1:]
				continue
			}
			if !continues {
				for _, p := range f.parts {
					if p.kind == PartResult {
						out.add(RuleResponsesOutputWithoutCall, v.rank(i), "No tool call found for %s with %s %s.", strings.ReplaceAll(p.typ, "_", " "), responsesOutputs[p.typ][1], p.id)
					}
				}
			}
		}
		for _, i := range queue {
			if k[0] == "mcp_approval_request" {
				continue
			}
			rule := RuleResponsesCallWithoutOutput
			if i > gl.barrier {
				rule = RuleResponsesPendingCalls
			}
			out.add(rule, v.rank(i), "No tool output found for %s %s.", strings.ReplaceAll(k[0], "_", " "), k[1])
		}
	}
	for _, id := range sortedKeys(ids) {
		n := 0
		for _, i := range rs.byID[id] {
			if v.isRemoved(i) || rs.factsIn(v, i).id != id {
				continue
			}
			if n++; n > 1 {
				out.add(RuleResponsesDuplicateItemID, v.rank(i), "Duplicate item found with id %s.", id)
			}
		}
	}
	return out
}

// wholeResponses reports an edit that changes whether the input
// continues what the server holds, or which output or user message is
// the last.
func wholeResponses(b *Body, gb, ga globals, _ *toolState) bool {
	return (b.continues || gb.itemRefs > 0) != (b.continues || ga.itemRefs > 0) || gb.barrier != ga.barrier
}
