package pruneguard

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Record is one audit entry of a [Decision]. A spilled message's pointer
// is in [Decision.Pointers].
type Record struct {
	Message MessageID
	Unit    UnitID
	Class   Class
	Tokens  int
	Stubbed bool // the content was stubbed; the message stays
}

type rec struct {
	tokens int32 // the message's tokens when the decision was made
	unit   int32 // index in unitTab
	class  Class
}

// Records returns the audit log of the decision: one entry per evicted or
// stubbed message, evictions first, each in transcript order, with the
// regenerability class it had when the decision was made. Log it:
// correlated with [ToolState.Refetches] it shows pruning that cost a
// re-run.
func (d *Decision) Records() []Record {
	out := make([]Record, len(d.recs))
	for i, r := range d.recs {
		out[i] = Record{Unit: d.unitTab[r.unit], Class: r.class, Tokens: int(r.tokens)}
		if i < len(d.Evict) {
			out[i].Message = d.Evict[i]
		} else {
			out[i].Message, out[i].Stubbed = d.Stub[i-len(d.Evict)], true
		}
	}
	return out
}

// callSig identifies a call by tool and arguments, whitespace aside, to
// notice a model calling again for a result that was pruned.
func callSig(tool string, args json.RawMessage) string {
	var b bytes.Buffer
	b.WriteString(tool)
	b.WriteByte(0)
	if json.Compact(&b, args) != nil {
		b.Write(args)
	}
	return b.String()
}

// forget records that the results of x's calls left the prompt, with the
// class they had, for refetch detection.
func (c *Context) forget(r *callRec, k Class) {
	if c.cleared == nil {
		c.cleared = make(map[string]Class)
	}
	var args json.RawMessage
	for _, call := range r.caller.m.Calls {
		if call.ID == r.id {
			args = call.Args
			break
		}
	}
	key := callSig(r.tool, args)
	c.cleared[key] = max(c.cleared[key], k)
}

// hoarded lists the large reconstructible messages a decision leaves in.
func (r *pruneRun) hoarded() []MessageID {
	c := r.c
	if len(c.large) == 0 {
		return nil
	}
	var xs []*msg
	for x := range c.large {
		if r.inEvict(x) || x.open || x.m.Pinned || x.unit.pending > 0 || x.unit.pinned > 0 || x.refs > 0 {
			continue
		}
		if c.classify(x) == Reconstructible {
			xs = append(xs, x)
		}
	}
	slices.SortFunc(xs, func(a, b *msg) int { return cmpSeq(a.seq, b.seq) })
	ids := make([]MessageID, len(xs))
	for i, x := range xs {
		ids[i] = x.m.ID
	}
	return ids
}
