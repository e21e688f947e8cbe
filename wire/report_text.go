package wire

import (
	"fmt"
	"strings"

	"github.com/pruneguard/pruneguard"
)

// String says in one line what the request's guarding did, for a log or
// a console: the tokens before, whether the request was over the
// trigger, the tokens after, then what left or came back, by id, and how
// many refusals stood. For example:
//
//	4210 tokens, over the trigger: pruned to 2980, evicted m3 m4, stubbed m7, 2 refused
//	1200 tokens, under the trigger: sent as the history stands
func (r Report) String() string {
	var b strings.Builder
	switch {
	case !r.Guarded:
		fmt.Fprintf(&b, "%d tokens, under the trigger: sent as the history stands", r.Before)
	case r.Result.Outcome == pruneguard.UnderBudget:
		fmt.Fprintf(&b, "%d tokens, under the trigger: pruned to %d", r.Before, r.After)
	case r.After < r.Before:
		fmt.Fprintf(&b, "%d tokens, over the trigger: pruned to %d", r.Before, r.After)
	default:
		fmt.Fprintf(&b, "%d tokens, over the trigger: nothing pruned", r.Before)
	}
	list := func(verb string, ids []string) {
		if len(ids) > 0 {
			b.WriteString(", " + verb + " " + strings.Join(ids, " "))
		}
	}
	list("evicted", idStrings(r.Evicted))
	list("stubbed", idStrings(r.Stubbed))
	list("withdrew", r.Withdrawn)
	list("restored", r.Restored)
	if n := len(r.Summarized); n > 0 {
		m := 0
		for _, s := range r.Summarized {
			m += len(s.Replaced)
		}
		fmt.Fprintf(&b, ", summarized %d %s in %d %s", m, plural(m, "message", "messages"), n, plural(n, "summary", "summaries"))
	}
	if n := len(r.Refusals); n > 0 {
		fmt.Fprintf(&b, ", %d refused", n)
	}
	if r.Reset {
		b.WriteString(", the history started over")
	}
	return b.String()
}

func idStrings(ids []pruneguard.MessageID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
