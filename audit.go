package pruneguard

import (
	"bytes"
	"encoding/json"
	"slices"
)

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

// forget records that the result of call k left the prompt, with the
// class it had, for refetch detection.
func (c *Context) forget(k int32, cls Class) {
	key := callSig(c.tools[c.call(k).tool].t.Name, c.args(k))
	if old, ok := c.cleared.get(key); ok {
		cls = max(cls, old)
	}
	c.cleared.put(key, cls)
}

// hoarded lists the large reconstructible messages a decision leaves in,
// in transcript order. It costs time in proportion to the messages of at
// least Config.HoardTokens that are not stubbed.
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
