package pruneguard

import "slices"

type step struct {
	refs []*msg
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
	xs := make([]*msg, 0, len(needs))
	for _, n := range needs {
		x, err := c.lookup("plan step", n)
		if err != nil {
			return err
		}
		xs = append(xs, x)
	}
	if c.steps[id] == nil {
		c.steps[id] = &step{}
	}
	for _, x := range xs {
		c.reference(id, x)
	}
	c.epoch++
	return nil
}

// reference records that step id will read x.
func (c *Context) reference(id StepID, x *msg) {
	s := c.steps[id]
	if s == nil {
		s = &step{}
		c.steps[id] = s
	}
	s.refs = append(s.refs, x)
	x.refs++
	x.unit.version++
}

// stepsOf lists the pending steps that reference x, sorted.
func (c *Context) stepsOf(x *msg) []StepID {
	var out []StepID
	for id, s := range c.steps {
		if slices.Contains(s.refs, x) {
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
	for _, x := range s.refs {
		x.refs--
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
