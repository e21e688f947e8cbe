package wire

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// validateChatRef is the Chat validator as first written, with a map of
// the issued, answered and answering ids for every message of calls: the
// reference validateChat must agree with.
func validateChatRef(msgs []*facts, sc scope, v *violations) {
	for i := 0; i < len(msgs); {
		m := msgs[i]
		switch {
		case m.role == "tool":
			v.add(RuleChatOrphanToolMessage, sc.off+i,
				"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
			i++
		case m.role == "function" && m.name == "":
			v.add(RuleChatFunctionWithoutName, sc.off+i,
				"Missing parameter 'name': messages with role 'function' must have a 'name'.")
			i++
		case m.role == "assistant" && hasToolCalls(m):
			ids := toolCallIDs(m)
			issued := make(map[string]bool, len(ids))
			for _, id := range ids {
				issued[id] = true
			}
			answered := map[string]bool{}
			answeredAt := map[string]int{}
			j := i + 1
			for ; j < len(msgs) && msgs[j].role == "tool"; j++ {
				for _, p := range msgs[j].parts {
					if p.kind != PartResult {
						continue
					}
					id := p.id
					if !issued[id] {
						v.add(RuleChatUnknownToolCallID, sc.off+j,
							"Invalid parameter: 'tool_call_id' of '%s' not found in 'tool_calls' of previous message.", id)
						continue
					}
					if answered[id] {
						v.add(RuleChatDuplicateToolResponse, sc.off+j,
							"Invalid parameter: Duplicate value for 'tool_call_id' of '%s', in messages[%d] and messages[%d].", id, sc.off+answeredAt[id], sc.off+j)
						continue
					}
					answered[id] = true
					answeredAt[id] = j
				}
			}
			if miss := missingIDs(ids, answered); len(miss) > 0 {
				rule := RuleChatToolCallsWithoutResponse
				if j == i+1 && j == len(msgs) && sc.atEnd {
					rule = RuleChatPendingCalls
				}
				v.add(rule, sc.off+i, "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s",
					strings.Join(miss, ", "))
			}
			i = j
		default:
			i++
		}
	}
}

// toolCallIDs returns the ids of a Chat message's tool_calls, leaving out
// a legacy function_call, which has none and which the API does not pair.
func toolCallIDs(m *facts) []string {
	var ids []string
	for _, p := range m.parts {
		if p.kind == PartCall && p.typ == "tool_call" {
			ids = append(ids, p.id)
		}
	}
	return ids
}

// genChatFacts draws Chat messages for the validator: assistants with
// batches of tool_calls (up to past the size where ids are found by a
// map), legacy function_calls, tool messages answering ids from a pool
// so that ids repeat, go astray or go missing, and other roles.
func genChatFacts(t *rapid.T) []*facts {
	pool := rapid.IntRange(1, 40).Draw(t, "pool")
	id := func() string { return fmt.Sprintf("c%d", rapid.IntRange(0, pool).Draw(t, "id")) }
	n := rapid.IntRange(0, 40).Draw(t, "messages")
	var ms []*facts
	for range n {
		f := &facts{}
		switch rapid.IntRange(0, 6).Draw(t, "kind") {
		case 0:
			f.role = "user"
		case 1:
			f.role = "assistant"
			for range rapid.IntRange(1, 40).Draw(t, "calls") {
				typ := "tool_call"
				if rapid.IntRange(0, 9).Draw(t, "legacy") == 0 {
					typ = "function_call"
				}
				f.add(fpart{kind: PartCall, typ: typ, id: id(), name: "f"})
			}
			if rapid.Bool().Draw(t, "text") {
				f.add(fpart{kind: PartText, typ: "text"})
			}
		case 2, 3, 4:
			f.role = "tool"
			for range rapid.IntRange(0, 2).Draw(t, "results") {
				f.add(fpart{kind: PartResult, id: id()})
			}
		case 5:
			f.role = "function"
			if rapid.Bool().Draw(t, "named") {
				f.name = "f"
			}
		case 6:
			f.role = "assistant"
		}
		ms = append(ms, f)
	}
	return ms
}

// TestValidateChatMatchesReference checks that validateChat finds the
// same violations, in the same order and wording, as the reference, on
// every window of random Chat messages.
func TestValidateChatMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ms := genChatFacts(t)
		lo := rapid.IntRange(0, len(ms)).Draw(t, "lo")
		hi := rapid.IntRange(lo, len(ms)).Draw(t, "hi")
		sc := scope{off: rapid.IntRange(0, 100).Draw(t, "off"), atStart: rapid.Bool().Draw(t, "atStart"), atEnd: rapid.Bool().Draw(t, "atEnd"), lastUser: -1, barrier: -1}
		var got, want violations
		validateChat(ms[lo:hi], sc, &got)
		validateChatRef(ms[lo:hi], sc, &want)
		if !slices.Equal(got, want) {
			t.Fatalf("validateChat:\n%v\nreference:\n%v", got, want)
		}
	})
}

// TestValidateChatLargeBatch pins the map path: a batch of more calls
// than a scan serves, with repeats, an unknown id, a duplicate answer
// and ids left unanswered.
func TestValidateChatLargeBatch(t *testing.T) {
	a := &facts{role: "assistant"}
	for k := range 2 * toolCallsIndexed {
		a.add(fpart{kind: PartCall, typ: "tool_call", id: fmt.Sprintf("c%d", k%(toolCallsIndexed+3))})
	}
	ms := []*facts{a}
	for _, id := range []string{"c0", "x", "c0", "c5", "c18"} {
		ms = append(ms, &facts{role: "tool", parts: []fpart{{kind: PartResult, id: id}}, nresults: 1})
	}
	var got, want violations
	validateChat(ms, scope{}, &got)
	validateChatRef(ms, scope{}, &want)
	if !slices.Equal(got, want) || len(got) != 3 {
		t.Fatalf("validateChat:\n%v\nreference:\n%v", got, want)
	}
	if !strings.Contains(got[2].Message, "c1, c2, c3, c4, c6") || strings.Contains(got[2].Message, "c18") {
		t.Fatalf("missing ids: %s", got[2].Message)
	}
}
