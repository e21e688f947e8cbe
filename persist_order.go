package pruneguard

// The order of a transcript as its saved form gives it: the messages in
// transcript order, and the calls in the order they were made, which is
// the transcript order but for calls given to Close after later
// messages were added (the closes of the saved form), and the units
// the calls and their results do not explain (its couplings). Save
// reads them from a Context, and the reader of version 1 from its
// records; Restore replays them.

// transcript is the order of messages and calls: messages by their
// place in transcript order, calls in the order made.
type transcript struct {
	ids   []str   // the messages' ids
	unit  []int32 // each message's unit, in any numbering below units
	units int32
	calls []tcall
	// reused holds the ids of calls that more than one call of the
	// transcript may have: a call with one must wait for the results of
	// the earlier ones.
	reused map[string]bool
}

// tcall is one call of a transcript.
type tcall struct {
	caller, result int32 // messages; result is none without one
	id             string
}

// transcript returns the Context's transcript: named says which calls
// their ids name (see namedCalls).
func (c *Context) transcript(named []bool) *transcript {
	t := &transcript{units: c.units.Len()}
	at := make([]int32, c.msgs.Len())
	for p := range c.positions() {
		at[p] = int32(len(t.ids))
		t.ids = append(t.ids, str(c.id(p)))
		t.unit = append(t.unit, c.msg(p).unit)
	}
	for k := int32(0); k < c.calls.Len(); k++ {
		r := c.call(k)
		if r.caller == none || c.msg(r.caller).flags&mDead != 0 {
			continue
		}
		tc := tcall{caller: at[r.caller], result: none, id: string(c.callID(k))}
		if r.result != none && c.msg(r.result).flags&mDead == 0 {
			tc.result = at[r.result]
		}
		if !named[k] {
			if t.reused == nil {
				t.reused = make(map[string]bool)
			}
			t.reused[tc.id] = true
		}
		t.calls = append(t.calls, tc)
	}
	return t
}

// closeAt is a close of the transcript: message msg gave its last n
// calls to Close after message after was added.
type closeAt struct{ msg, n, after int32 }

// closes finds the closes: the messages whose last calls were made
// after some later message was added. A call must come after the last
// message whose calls were made before it, and after the results of
// the earlier calls with its id (which had to close before the id
// could be used again); a call that must come after a later message
// than its own was given at its close, with the calls of its message
// after it. Each close comes as early as that allows, and no earlier
// than the close before it.
func (t *transcript) closes() []closeAt {
	var out []closeAt
	var open map[int32]int // message -> its close in out
	lastCaller := none
	var results map[string]int32 // reused id -> the last result of its calls
	for _, k := range t.calls {
		bound := lastCaller
		if t.reused[k.id] {
			if r, ok := results[k.id]; ok {
				bound = max(bound, r)
			}
			if k.result != none {
				if results == nil {
					results = make(map[string]int32)
				}
				results[k.id] = max(results[k.id], k.result)
			}
		}
		if i, ok := open[k.caller]; ok {
			out[i].n++
			out[i].after = max(out[i].after, bound)
		} else if bound > k.caller {
			if open == nil {
				open = make(map[int32]int)
			}
			open[k.caller] = len(out)
			out = append(out, closeAt{msg: k.caller, n: 1, after: bound})
		}
		lastCaller = max(lastCaller, k.caller)
	}
	for i := 1; i < len(out); i++ {
		out[i].after = max(out[i].after, out[i-1].after)
	}
	return out
}

// savedCloses returns the closes in their saved form.
func (t *transcript) savedCloses() []savedClose {
	var out []savedClose
	for _, cl := range t.closes() {
		out = append(out, savedClose{Message: t.ids[cl.msg], Calls: int(cl.n), After: t.ids[cl.after]})
	}
	return out
}

// couplings returns, for each unit that the calls and their results do
// not make, the first message of each of its parts, in transcript
// order; the units in the order of their first message.
func (t *transcript) couplings() [][]int32 {
	parent := make([]int32, len(t.ids))
	for i := range parent {
		parent[i] = int32(i)
	}
	var find func(int32) int32
	find = func(p int32) int32 {
		for parent[p] != p {
			parent[p] = parent[parent[p]]
			p = parent[p]
		}
		return p
	}
	for _, k := range t.calls {
		if k.result != none {
			a, b := find(k.caller), find(k.result)
			parent[max(a, b)] = min(a, b)
		}
	}
	// A part's first message is its root: the parts of each unit.
	parts := make([]int32, t.units)
	for i := range parent {
		if find(int32(i)) == int32(i) {
			parts[t.unit[i]]++
		}
	}
	var out [][]int32
	group := make([]int32, t.units)
	for i := range group {
		group[i] = none
	}
	for i := range parent {
		u := t.unit[i]
		if parts[u] < 2 || find(int32(i)) != int32(i) {
			continue
		}
		if group[u] == none {
			group[u] = int32(len(out))
			out = append(out, make([]int32, 0, parts[u]))
		}
		out[group[u]] = append(out[group[u]], int32(i))
	}
	return out
}

// savedCouplings returns the couplings in their saved form.
func (t *transcript) savedCouplings() [][]str {
	var out [][]str
	for _, g := range t.couplings() {
		ids := make([]str, len(g))
		for i, p := range g {
			ids[i] = t.ids[p]
		}
		out = append(out, ids)
	}
	return out
}
