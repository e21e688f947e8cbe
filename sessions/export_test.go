package sessions

// UseExclLocks makes Dir lock with exclusively created files, as it does
// on systems without flock, until the returned function is called.
func UseExclLocks() (restore func()) {
	old := lockID
	lockID = exclLockID
	return func() { lockID = old }
}
