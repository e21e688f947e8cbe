package pruneguard

// Abandon declares calls that will never be answered: an orphan deep in
// the history whose result was never recorded, a call whose stream was
// cancelled before its result began, a result the runtime lost. Each stops
// being pending at once: its unit closes and is judged by the gates like
// any other, and the strict commit boundary no longer defers on it (it
// still defers on every other pending call and streaming message). The
// call's arguments stay in the prompt with its message, so they still
// count for the evict-or-tombstone gate ([ToolState.Args]).
//
// A result that arrives later for an abandoned call is refused with
// [ErrAbandonedCall] (also once the call was pruned, while the Context
// remembers it, as for [ErrPrunedCall]). Abandoning is all or nothing: it
// fails, changing nothing, with an [*InputError] naming the first
// offending id, for an empty id ([ErrEmptyID]), a call the Context does not
// hold ([ErrUnknownCall], or [ErrPrunedCall] once pruned), one already
// abandoned or named twice ([ErrAbandonedCall]), one with a closed result
// or run by the provider ([ErrAnsweredCall]), and one whose result is
// still streaming ([ErrOpenMessage]): close that stream first, and the
// partial result it holds answers the call.
//
// Once abandoned, a call's id may be used again by a new call, as the id
// of an answered call may.
func (c *Context) Abandon(ids ...CallID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	ks := make([]int32, 0, len(ids))
	var seen map[CallID]bool
	if len(ids) > 16 {
		seen = make(map[CallID]bool, len(ids))
	}
	for i, id := range ids {
		if id == "" {
			return inputErr("abandon", "", ErrEmptyID)
		}
		twice := seen[id]
		if seen == nil {
			for _, o := range ids[:i] {
				twice = twice || o == id
			}
		} else {
			seen[id] = true
		}
		k, ok := c.byCall.Find(string(id))
		var err error
		switch {
		case !ok:
			err = ErrUnknownCall
			if abandoned, gone := c.goneGet(id); gone {
				err = ErrPrunedCall
				if abandoned {
					err = ErrAbandonedCall
				}
			}
		case twice || c.call(k).flags&cAbandon != 0:
			err = ErrAbandonedCall
		case c.call(k).flags&cDone != 0:
			err = ErrAnsweredCall
		case c.call(k).result != none:
			err = ErrOpenMessage
		}
		if err != nil {
			return inputErr("abandon", string(id), err)
		}
		ks = append(ks, k)
	}
	for _, k := range ks {
		r := c.call(k)
		r.flags |= cDone | cAbandon
		c.unpend(k)
		c.touch(c.msg(r.caller).unit)
	}
	return nil
}
