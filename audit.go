package pruneguard

import "slices"

// Record is one audit entry of a [Decision]. A spilled message's pointer
// is in [Decision.Pointers].
//
// The zero Record describes no message.
type Record struct {
	Message MessageID
	Unit    UnitID
	Class   Class
	Tokens  int
	Stubbed bool // the content was stubbed; the message stays
	// Hash is, for a tool result (a message that answers calls, or that
	// carries a [Call.Server] call and so its result), the hash of the
	// content it had when the decision was made (see
	// [ContentHash]): a result fetched again is compared with it
	// ([RefetchAlert]). It is zero for other messages.
	Hash ContentHash
}

type rec struct {
	tokens int32 // the message's tokens when the decision was made
	unit   int32 // index in unitTab
	class  Class
	// result says the message carries a result with content, whose hash
	// Decision.hashResults writes (the hash of empty content is written
	// at once).
	result bool
	hash   ContentHash
}

// Records returns the audit log of the decision: one entry per evicted or
// stubbed message, evictions first, each in transcript order, with the
// regenerability class it had when the decision was made and the hash of
// its content. Log it: the Context correlates it with the calls that
// fetch a pruned result again ([Context.TakeAlerts]).
func (d *Decision) Records() []Record {
	out := make([]Record, len(d.recs))
	for i, r := range d.recs {
		out[i] = Record{Unit: d.unitTab[r.unit], Class: r.class, Tokens: int(r.tokens), Hash: r.hash}
		if i < len(d.Evict) {
			out[i].Message = d.Evict[i]
		} else {
			out[i].Message, out[i].Stubbed = d.Stub[i-len(d.Evict)], true
		}
	}
	return out
}

// hoarded lists the large reconstructible messages a decision leaves in,
// in transcript order. It costs time in proportion to the messages that
// may be hoarded (Context.large, see trackLarge), not to the Context.
func (r *pruneRun) hoarded() []int32 {
	c := r.c
	if len(c.large) == 0 {
		return nil
	}
	var ps []int32
	for p := range c.large {
		x := c.msg(p)
		u := c.unit(x.unit)
		if r.has(p, kEvict) || x.flags&(mOpen|mPinned) != 0 || u.pending > 0 || u.pinned > 0 || c.refs(p) > 0 {
			continue
		}
		if c.classify(p) == Reconstructible {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}
