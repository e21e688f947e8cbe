package pruneguard

import "slices"

type step struct {
	refs []int32 // the messages the step reads (those gone are skipped)
}

// PlanStep registers a planned step that will read the given messages.
// Until [Context.CompleteStep] resolves it, none of them may be evicted or
// stubbed, whatever their class. Registering an existing step adds to its
// references.
func (c *Context) PlanStep(id StepID, needs ...MessageID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if id == "" {
		return inputErr("plan step", "", ErrEmptyID)
	}
	ps := make([]int32, 0, len(needs))
	for _, n := range needs {
		p, err := c.lookup("plan step", n)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	if c.steps[id] == nil {
		c.steps[id] = &step{}
	}
	for _, p := range ps {
		c.reference(id, p)
	}
	c.epoch++
	return nil
}

// reference records that step id will read message p.
func (c *Context) reference(id StepID, p int32) {
	s := c.steps[id]
	if s == nil {
		s = &step{}
		c.steps[id] = s
	}
	s.refs = append(s.refs, p)
	c.side(p).refs++
	c.touch(c.msg(p).unit)
}

// stepsOf lists the pending steps that reference message p, sorted.
func (c *Context) stepsOf(p int32) []StepID {
	var out []StepID
	for id, s := range c.steps {
		if slices.Contains(s.refs, p) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// CompleteStep resolves a planned step: its references no longer hold
// messages in the prompt.
func (c *Context) CompleteStep(id StepID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	s, ok := c.steps[id]
	if !ok {
		return inputErr("complete step", string(id), ErrUnknownStep)
	}
	for _, p := range s.refs {
		if c.msg(p).flags&mDead == 0 {
			c.side(p).refs--
		}
	}
	delete(c.steps, id)
	c.epoch++
	return nil
}

// SealSteps declares that the steps registered with [Context.PlanStep] are
// the complete set of steps that remain (a closed dependency set). While
// sealed, a message no remaining step references counts as safe to evict
// even when irreducible: the plan proves nobody will read it. Seal only
// when the plan really is closed, typically for its terminal step.
func (c *Context) SealSteps(sealed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if c.sealed != sealed {
		c.sealed = sealed
		c.epoch++
	}
}
