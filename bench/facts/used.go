package main

import (
	"github.com/pruneguard/pruneguard/internal/facts"
	"github.com/pruneguard/pruneguard/wire"
)

// usedFact is a fact of the past that a later assistant turn uses.
type usedFact struct {
	facts.Fact
	from int // the first past message holding it
	by   int // the first message after the cut that holds it, an assistant's
}

// cutAt returns the index of the first message at or after frac of the
// session where the model's turn starts (an assistant message or item
// after one that is not), or -1: the past is what the model was sent
// for that turn.
func cutAt(msgs []wire.Message, frac float64) int {
	for i := max(1, int(frac*float64(len(msgs)))); i < len(msgs); i++ {
		if isAssistant(msgs[i]) && !isAssistant(msgs[i-1]) {
			return i
		}
	}
	return -1
}

// usedFacts returns the facts of the past, s.msgs[:cut], that a later
// assistant turn uses. The rule: a fact extracted from a past message
// other than a system message (each string once), not carried by what
// every mode keeps (the system prompt, and the request's other fields
// such as its tools), whose first appearance after
// the cut is in an assistant message (its text or a call's arguments).
// A fact that a later user message or tool result shows first is one the
// model could read there, and is not counted.
func usedFacts(s *session, cut int) []usedFact {
	sys := facts.NewCarrier(s.system)
	later := make([]*facts.Carrier, len(s.msgs)-cut)
	carrier := func(j int) *facts.Carrier {
		if later[j-cut] == nil {
			later[j-cut] = facts.NewCarrier(joinTexts(contentTexts(s.msgs[j].Raw)))
		}
		return later[j-cut]
	}
	seen := map[string]bool{}
	var out []usedFact
	for i := 0; i < cut; i++ {
		if isSystem(s.msgs[i]) {
			continue
		}
		for _, text := range contentTexts(s.msgs[i].Raw) {
			for _, f := range facts.Extract(text) {
				if seen[f.Text] {
					continue
				}
				seen[f.Text] = true
				if sys.Carries(f) {
					continue
				}
				for j := cut; j < len(s.msgs); j++ {
					if carrier(j).Carries(f) {
						if isAssistant(s.msgs[j]) {
							out = append(out, usedFact{Fact: f, from: i, by: j})
						}
						break
					}
				}
			}
		}
	}
	return out
}

func joinTexts(ts []string) string {
	n := 0
	for _, t := range ts {
		n += len(t) + len(sep)
	}
	b := make([]byte, 0, n)
	for _, t := range ts {
		b = append(append(b, t...), sep...)
	}
	return string(b)
}
