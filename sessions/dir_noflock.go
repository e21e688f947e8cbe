//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package sessions

// lockID takes the lock of one id of a Dir: a file created exclusively
// here, for want of flock.
var lockID = exclLockID
