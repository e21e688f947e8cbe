package sessions

import "context"

// UseExclLocks makes Dir lock with exclusively created files, as it does
// on systems without flock, until the returned function is called.
func UseExclLocks() (restore func()) {
	old := lockID
	lockID = exclLockID
	return func() { lockID = old }
}

// HoldLock takes the lock of id in dir as a Save would, until the
// returned function is called.
func HoldLock(t interface{ Fatal(...any) }, dir, id string) (unlock func()) {
	u, err := lockID(context.Background(), Dir(dir).path(lockPrefix, id))
	if err != nil {
		t.Fatal(err)
	}
	return func() { u(false) }
}
