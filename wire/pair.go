package wire

import (
	"cmp"
	"slices"

	"github.com/pruneguard/pruneguard"
)

// pairing is how the messages of a body pair up, by index.
type pairing struct {
	answers  map[int][]pruneguard.CallID // results message -> calls it answers
	drop     map[[2]int]bool             // (message, call) left out of Calls
	unpaired []Unpaired
	// stored lists the Responses items that answer calls, or refer to
	// items, the server holds (previous_response_id, conversation,
	// item_reference): they pair with nothing in the body and must stay.
	stored []int
}

// pairBody pairs calls and results by the dialect's adjacency rules, the
// ones Validate checks. Calls of the trailing batch without a result stay
// in (pending); other calls without a result are dropped and reported.
func pairBody(b *Body) *pairing {
	p := &pairing{answers: map[int][]pruneguard.CallID{}, drop: map[[2]int]bool{}}
	msgs := b.Messages
	n := len(msgs)
	// answer pairs result id of message j with the first unanswered call
	// of message i holding that id.
	answer := func(i int, done []bool, j int, id string) bool {
		for k, c := range msgs[i].Calls {
			if !done[k] && c.ID == id {
				done[k] = true
				p.answers[j] = append(p.answers[j], callID(i, k))
				return true
			}
		}
		return false
	}
	orphan := func(j int, id string) { p.unpaired = append(p.unpaired, Unpaired{Index: j, CallID: id, Result: true}) }
	settle := func(i int, done []bool, pending bool) {
		for k, c := range msgs[i].Calls {
			if done[k] || pending {
				continue
			}
			p.drop[[2]int{i, k}] = true
			p.unpaired = append(p.unpaired, Unpaired{Index: i, CallID: c.ID})
		}
	}
	switch b.Dialect {
	case OpenAIChat:
		for i := 0; i < n; {
			m := &msgs[i]
			if m.Role != "assistant" || len(m.Calls) == 0 {
				for _, id := range m.Results {
					orphan(i, id)
				}
				i++
				continue
			}
			// The block after the calls: tool messages, and the function
			// message that answers a legacy function_call.
			done := make([]bool, len(m.Calls))
			j := i + 1
			for ; j < n; j++ {
				if r := msgs[j].Role; r != "tool" && (r != "function" || !openLegacy(m, done)) {
					break
				}
				for _, id := range msgs[j].Results {
					if !answer(i, done, j, id) {
						orphan(j, id)
					}
				}
			}
			settle(i, done, j == n)
			i = j
		}
	case OpenAIResponses:
		barrier := responsesBarrier(msgs)
		type ref struct{ i, k int }
		queue := map[[2]string][]ref{}
		var order []ref
		answered := map[ref]bool{}
		for i := range msgs {
			if msgs[i].Type == "item_reference" {
				p.stored = append(p.stored, i)
			}
			for k, c := range msgs[i].Calls {
				key := [2]string{msgs[i].Type, c.ID}
				queue[key] = append(queue[key], ref{i, k})
				order = append(order, ref{i, k})
			}
			for _, part := range msgs[i].Parts {
				if part.Kind != PartResult {
					continue
				}
				key := [2]string{responsesOutputs[part.Type][0], part.ID}
				q := queue[key]
				if len(q) == 0 {
					if b.continues {
						p.stored = append(p.stored, i)
					} else {
						orphan(i, part.ID)
					}
					continue
				}
				queue[key] = q[1:]
				answered[q[0]] = true
				p.answers[i] = append(p.answers[i], callID(q[0].i, q[0].k))
			}
		}
		for _, r := range order {
			if answered[r] || r.i > barrier {
				continue
			}
			p.drop[[2]int{r.i, r.k}] = true
			if msgs[r.i].Type != "mcp_approval_request" { // may stay unanswered
				p.unpaired = append(p.unpaired, Unpaired{Index: r.i, CallID: msgs[r.i].Calls[r.k].ID})
			}
		}
	case Anthropic:
		turns := mergeTurns(msgs)
		for t := range turns {
			tn := &turns[t]
			if tn.role != "assistant" {
				if t > 0 && turns[t-1].role == "assistant" {
					continue // paired below, with the assistant turn
				}
				for i := tn.first; i <= tn.last; i++ {
					for _, id := range msgs[i].Results {
						orphan(i, id)
					}
				}
				continue
			}
			done := map[int][]bool{}
			for i := tn.first; i <= tn.last; i++ {
				done[i] = make([]bool, len(msgs[i].Calls))
				for _, id := range msgs[i].Results {
					orphan(i, id) // tool_result in an assistant turn
				}
			}
			if t+1 < len(turns) && turns[t+1].role == "user" {
				nx := &turns[t+1]
				for j := nx.first; j <= nx.last; j++ {
					for _, id := range msgs[j].Results {
						ok := false
						for i := tn.first; i <= tn.last && !ok; i++ {
							ok = answer(i, done[i], j, id)
						}
						if !ok {
							orphan(j, id)
						}
					}
				}
			}
			for i := tn.first; i <= tn.last; i++ {
				settle(i, done[i], t == len(turns)-1)
			}
		}
	case Gemini, Bedrock:
		paired := make([]bool, n)
		for i := range msgs {
			m := &msgs[i]
			if len(m.Calls) == 0 {
				continue
			}
			done := make([]bool, len(m.Calls))
			if j := i + 1; j < n && (b.Dialect == Gemini || msgs[j].Role == "user") && len(msgs[j].Results) > 0 {
				paired[j] = true
				byPos := b.Dialect == Gemini && !allIDs(m.Calls, msgs[j].Results)
				for r, id := range msgs[j].Results {
					switch {
					case byPos && r < len(m.Calls) && !done[r]:
						done[r] = true
						p.answers[j] = append(p.answers[j], callID(i, r))
					case !byPos && answer(i, done, j, id):
					default:
						orphan(j, id)
					}
				}
			}
			settle(i, done, i == n-1)
		}
		for j := range msgs {
			if !paired[j] {
				for _, id := range msgs[j].Results {
					orphan(j, id)
				}
			}
		}
	}
	// In body order; at one index, in the order found.
	slices.SortStableFunc(p.unpaired, func(a, b Unpaired) int { return cmp.Compare(a.Index, b.Index) })
	return p
}

// unresolvedServerCall reports a server call among parts with no server
// result for its id among them.
func unresolvedServerCall(parts []turnPart) bool {
	done := map[string]bool{}
	for _, p := range parts {
		if p.Kind == PartServerResult {
			done[p.ID] = true
		}
	}
	for _, p := range parts {
		if p.Kind == PartServerCall && !done[p.ID] {
			return true
		}
	}
	return false
}

// openLegacy reports an unanswered legacy function_call (the call
// without an id) among m's calls.
func openLegacy(m *Message, done []bool) bool {
	for k, c := range m.Calls {
		if c.ID == "" && !done[k] {
			return true
		}
	}
	return false
}

func allIDs(calls []Call, results []string) bool {
	for _, c := range calls {
		if c.ID == "" {
			return false
		}
	}
	for _, id := range results {
		if id == "" {
			return false
		}
	}
	return true
}

// roleClass folds a message's role into "user" or "assistant" for the
// turn structure of Anthropic, Gemini and Bedrock.
func roleClass(d Dialect, m *Message) string {
	if d == Gemini {
		if isGeminiUserRole(m.Role) {
			return "user"
		}
		return "assistant"
	}
	return m.Role
}

// coupleGroups returns the groups of message indexes that must be kept or
// pruned together beyond the core's call/result grouping.
func coupleGroups(b *Body) [][]int {
	msgs := b.Messages
	var groups [][]int
	switch b.Dialect {
	case OpenAIResponses:
		for i := 0; i < len(msgs); {
			j := i
			for j+1 < len(msgs) && len(msgs[i].Calls) > 0 && len(msgs[j+1].Calls) > 0 {
				j++
			}
			if j > i {
				groups = append(groups, span(i, j))
			}
			i = j + 1
		}
		for i := range msgs {
			if msgs[i].Type == "reasoning" && i+1 < len(msgs) {
				groups = append(groups, []int{i, i + 1})
			}
		}
	case Anthropic, Gemini, Bedrock:
		// Turns: runs of one role class. Each assistant turn goes with the
		// user turn after it.
		type turn struct{ first, last int }
		var turns []turn
		var roles []string
		for i := range msgs {
			r := roleClass(b.Dialect, &msgs[i])
			if k := len(turns); k > 0 && roles[k-1] == r {
				turns[k-1].last = i
				continue
			}
			turns = append(turns, turn{i, i})
			roles = append(roles, r)
		}
		for t := 0; t < len(turns); t++ {
			first, last := turns[t].first, turns[t].last
			if roles[t] == "assistant" && t+1 < len(turns) {
				last = turns[t+1].last
				t++
			}
			if last > first {
				groups = append(groups, span(first, last))
			}
		}
	}
	return groups
}

func span(i, j int) []int {
	out := make([]int, 0, j-i+1)
	for k := i; k <= j; k++ {
		out = append(out, k)
	}
	return out
}

// isRealUser reports a user message that is not (only) tool results.
func isRealUser(d Dialect, m *Message) bool {
	if len(m.Results) > 0 {
		return false
	}
	switch d {
	case OpenAIResponses:
		return isUserMessage(m)
	case Gemini:
		return isGeminiUserRole(m.Role)
	}
	return m.Role == "user"
}

// pinned returns the indexes of the messages to pin (see Body.Context),
// with stored, the items pairing found answering what the server holds.
func pinned(b *Body, stored []int) []int {
	msgs := b.Messages
	out := slices.Clone(stored)
	firstUser, lastUser := -1, -1
	reasoning := false
	for i := range msgs {
		m := &msgs[i]
		if m.Role == "system" || m.Role == "developer" {
			out = append(out, i)
		}
		if isRealUser(b.Dialect, m) {
			if firstUser < 0 {
				firstUser = i
			}
			lastUser = i
		}
		reasoning = reasoning || m.Reasoning
		for _, c := range m.Calls {
			reasoning = reasoning || c.Signed
		}
	}
	// A server tool call whose result has not come (Anthropic pause_turn)
	// is in flight: the last assistant turn holding one goes back as it
	// is.
	if b.Dialect == Anthropic {
		turns := mergeTurns(msgs)
		for t := len(turns) - 1; t >= 0; t-- {
			if turns[t].role != "assistant" {
				continue
			}
			if unresolvedServerCall(turns[t].parts) {
				for i := turns[t].first; i <= turns[t].last; i++ {
					out = append(out, i)
				}
			}
			break
		}
	}
	// The first real user message usually states the task: it stays, in
	// every dialect (and keeps Anthropic, Gemini and Bedrock histories
	// starting with a user turn).
	if firstUser >= 0 && firstUser != lastUser {
		out = append(out, firstUser)
	}
	if lastUser >= 0 {
		out = append(out, lastUser)
		if reasoning {
			for i := lastUser + 1; i < len(msgs); i++ {
				out = append(out, i)
			}
		}
	}
	return out
}
