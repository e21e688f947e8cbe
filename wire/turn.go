package wire

import (
	"slices"

	"github.com/pruneguard/pruneguard"
)

// The turn in progress. Once a history carries reasoning or signed calls
// (Responses reasoning items, Anthropic thinking blocks, Gemini thought
// signatures), the provider asks for the reasoning and the calls made
// since the last real user message back, in order: no unit after that
// message may go. It does not ask for every result's full content, so a
// result of the turn may be stubbed (the rule screen still refusing a
// stub the provider would reject), and a long agent run on one user
// message can be brought under its budget by stubbing its large
// outputs. A Session keeps those units out of its policy's evictions and
// refuses their eviction at its screen (see [Session.protected]); a
// Guarded refuses it at its screen (see [Guarded.turnRefusals]). Neither
// pins them in the Context, where a pin would keep their results from a
// stub too.

// outsideTurn returns plan p without the evictions of units protect
// keeps (all of them, whole or from eviction alone).
func (s *Session) outsideTurn(p pruneguard.Plan, protect map[pruneguard.UnitID]bool) pruneguard.Plan {
	if len(protect) == 0 || len(p.Evict) == 0 {
		return p
	}
	kept := func(id pruneguard.MessageID) bool {
		u, ok := s.ctx.UnitOf(id)
		_, in := protect[u.ID]
		return ok && in
	}
	if !slices.ContainsFunc(p.Evict, kept) {
		return p
	}
	p.Evict = slices.DeleteFunc(slices.Clone(p.Evict), kept)
	return p
}

// inTurn reports whether message i of the body is after the last real
// user message of a body that carries reasoning or signed calls.
func (g *Guarded) inTurn(i int) bool { return g.turn >= 0 && i >= g.turn }

// turnRefusals refuses the evictions of decision d that take units of
// the turn in progress: one refusal with code [CodeActiveTurn] for each
// such unit, naming its messages d evicts.
func (g *Guarded) turnRefusals(d *pruneguard.Decision) []Refusal {
	if g.turn < 0 {
		return nil
	}
	var out []Refusal
	at := map[pruneguard.UnitID]int{}
	n := len(g.src.facts)
	for _, id := range d.Evict {
		i, ok := indexOf(id, n)
		if !ok || !g.inTurn(i) {
			continue
		}
		u, _ := g.ctx.UnitOf(id)
		k, seen := at[u.ID]
		if !seen {
			k = len(out)
			at[u.ID] = k
			out = append(out, Refusal{Gate: "wire", Code: CodeActiveTurn, Units: []pruneguard.UnitID{u.ID}})
		}
		out[k].Messages = append(out[k].Messages, id)
		out[k].Indexes = append(out[k].Indexes, i)
	}
	return out
}

// outsideTurn returns the candidates of decision d, less the units of
// the turn in progress: its stubs stay.
func (g *Guarded) outsideTurn(d *pruneguard.Decision) []candidate {
	return slices.DeleteFunc(g.candidates(d, nil, nil), func(c candidate) bool {
		return slices.ContainsFunc(c.rm, func(i int32) bool { return g.inTurn(int(i)) })
	})
}
