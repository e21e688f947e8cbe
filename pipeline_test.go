package pruneguard

import "slices"

// The test hook on the pipeline Prune runs: a Context that runs the gates
// alone, or without one of them. Production code never sets it.

// withoutGates makes c's Prune skip the given gates: what they would
// have narrowed goes through as the plan names it.
func withoutGates(c *Context, gates ...Gate) {
	c.pipeline = slices.DeleteFunc(slices.Clone(pipeline), func(s stage) bool {
		return s.gate != 0 && slices.Contains(gates, s.gate)
	})
}

// onlyGate makes c's Prune run gate g and no other.
func onlyGate(c *Context, g Gate) {
	c.pipeline = slices.DeleteFunc(slices.Clone(pipeline), func(s stage) bool {
		return s.gate != 0 && s.gate != g
	})
}

// allGates gives c back the full pipeline.
func allGates(c *Context) { c.pipeline = nil }
