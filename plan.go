package pruneguard

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/pruneguard/pruneguard/internal/schemadiff"
)

// Plan is what a salience policy proposes: messages to evict, results to
// stub, schemas to withdraw or compress. The guard disposes. A Plan is a
// plain value; Prune only reads it.
//
// The zero Plan proposes nothing.
type Plan struct {
	// Evict names messages to remove from the prompt.
	Evict []MessageID
	// Stub names tool results whose content should be replaced by a short
	// placeholder while the call, the result and their ids stay. The
	// content is gone either way, so the regenerability gate applies.
	Stub []MessageID
	// DropSchemas names tools whose schema should leave the prompt.
	DropSchemas []string
	// CompressSchemas proposes smaller schemas. One that may accept
	// arguments the registered schema rejects (a constraint dropped or
	// weakened anywhere, references followed; annotations such as title
	// and description may go) counts as withdrawing the schema.
	CompressSchemas map[string]json.RawMessage
	// Split says how to treat units the plan names only in part.
	Split SplitMode
	// Summary, when set, replaces a run of whole units with one summary
	// message (see [Summary]). A plan with a Summary evicts and stubs
	// nothing else; it may change schemas.
	Summary *Summary
}

// Empty reports whether the plan proposes nothing.
func (p Plan) Empty() bool {
	return len(p.Evict) == 0 && len(p.Stub) == 0 && len(p.DropSchemas) == 0 && len(p.CompressSchemas) == 0 && p.Summary == nil
}

// planHint says where the messages a plan names were when the plan was
// made: positions parallel to Plan.Evict and Plan.Stub. A position is
// only a hint, used when the message there is still live and has the id
// the plan names (see Context.locate); a hint shorter than its list, or
// none, leaves the rest to the lookup by id.
type planHint struct{ evict, stub []int32 }

// locate returns the position of message id, the i-th of a plan's list
// whose hint is hint. A live message with that id at the hinted position
// is the one the index would find, for ids are unique among live
// messages: the hint saves hashing the id. Under the read lock.
func (c *Context) locate(id MessageID, hint []int32, i int) (int32, bool) {
	if i < len(hint) {
		if q := hint[i]; q >= 0 && q < c.msgs.Len() {
			if x := c.msg(q); x.flags&mDead == 0 && x.idLen == uint32(len(id)) && string(c.text.Bytes(x.text)[:x.idLen]) == string(id) {
				return q, true
			}
		}
	}
	return c.find(id)
}

// checkPlan rejects a plan that names what the Context does not hold. It
// returns the positions of the messages p.Evict names, then those of
// p.Stub; h may say where they are.
func (c *Context) checkPlan(p Plan, h planHint) ([]int32, error) {
	at := make([]int32, 0, len(p.Evict)+len(p.Stub))
	for i, id := range p.Evict {
		q, ok := c.locate(id, h.evict, i)
		if !ok {
			return nil, inputErr("plan.evict", string(id), ErrUnknownMessage)
		}
		at = append(at, q)
	}
	for i, id := range p.Stub {
		q, ok := c.locate(id, h.stub, i)
		if !ok {
			return nil, inputErr("plan.stub", string(id), ErrUnknownMessage)
		}
		if !c.isResult(q) {
			return nil, inputErr("plan.stub", string(id), ErrNotResult)
		}
		at = append(at, q)
	}
	for _, name := range p.DropSchemas {
		if r := c.toolRec(name); r == nil || !r.registered {
			return nil, inputErr("plan.drop_schemas", name, ErrUnknownTool)
		}
	}
	if len(p.CompressSchemas) == 0 {
		return at, nil
	}
	// In name order, so that equal plans give equal errors.
	for _, name := range slices.Sorted(maps.Keys(p.CompressSchemas)) {
		r := c.toolRec(name)
		if r == nil || !r.registered {
			return nil, inputErr("plan.compress_schemas", name, ErrUnknownTool)
		}
		if _, err := schemadiff.Compare(r.t.Schema, p.CompressSchemas[name]); err != nil {
			return nil, inputErr("plan.compress_schemas", name, ErrBadSchema)
		}
	}
	return at, nil
}

// withoutTools returns p less the schema edits of the given tools.
func withoutTools(p Plan, tools map[string]bool) Plan {
	if len(tools) == 0 {
		return p
	}
	p.DropSchemas = slices.DeleteFunc(slices.Clone(p.DropSchemas), func(t string) bool { return tools[t] })
	if len(p.CompressSchemas) > 0 {
		cs := make(map[string]json.RawMessage, len(p.CompressSchemas))
		for t, s := range p.CompressSchemas {
			if !tools[t] {
				cs[t] = s
			}
		}
		p.CompressSchemas = cs
	}
	return p
}
