package pruneguard

// TombstoneText returns the line a tombstone of tool name carries when
// the tool's schema is withdrawn: the tool is still there, and its schema
// must be asked for before a call. A mutating tool's line also says that
// it changes state and that a call must not be rebuilt from earlier
// arguments. It is the text of [Tombstone].Text for the tombstones a
// decision makes, for an adapter that writes a tombstone of its own.
func TombstoneText(name string, mutating bool) string { return tombstoneText(name, mutating) }
