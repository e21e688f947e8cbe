// Package storecheck holds what the conformance suites of the stores
// (spill/storetest and sessions/storetest) share: names unique to one
// run, bytes described briefly, errors checked for the name they carry,
// and the done contexts every store must refuse.
package storecheck

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Prefix returns a prefix unique to one run of one check:
// "storetest-", 16 random hex digits and "-".
func Prefix() string { return "storetest-" + RandomHex(8) + "-" }

// RandomHex returns n random bytes in hex.
func RandomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Describe names bytes briefly in failure messages: nil, the bytes
// quoted when they are few, or their length and the start of their
// SHA-256.
func Describe(b []byte) string {
	if b == nil {
		return "nil"
	}
	if len(b) <= 16 {
		return fmt.Sprintf("%q", b)
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%d bytes, sha256 %x…", len(b), sum[:4])
}

// JoinSome joins the first few failures of errs (nil ones left out) and
// counts the rest.
func JoinSome(errs []error) error {
	errs = slices.DeleteFunc(errs, func(err error) bool { return err == nil })
	const most = 8
	if len(errs) > most {
		errs = append(errs[:most:most], fmt.Errorf("and %d more failures like these", len(errs)-most))
	}
	return errors.Join(errs...)
}

// Named checks that err, the error of op on name, matches target and is
// an E that names name: typ is E's name in messages ("*spill.KeyError"),
// noun what name is ("key"), and nameOf reads the name an E carries.
func Named[E error](op, name string, err, target error, typ, noun string, nameOf func(E) string) error {
	if err == nil {
		return fmt.Errorf("%s(%q) succeeded, want an error matching %v", op, name, target)
	}
	if !errors.Is(err, target) {
		return fmt.Errorf("%s(%q): error %q does not match %v", op, name, err, target)
	}
	var e E
	if !errors.As(err, &e) {
		return fmt.Errorf("%s(%q): error %q is not a %s", op, name, err, typ)
	}
	if got := nameOf(e); got != name {
		return fmt.Errorf("%s(%q): %s names %s %q", op, name, typ, noun, got)
	}
	return nil
}

// Done is a context a store must refuse, and the error it must give.
type Done struct {
	Name string // for names: "cancelled", "expired"
	What string // for messages: "a cancelled context"
	Ctx  context.Context
	Want error
}

// DoneContexts returns, derived from ctx, a cancelled context and one
// whose deadline has passed. Call the function returned once done.
func DoneContexts(ctx context.Context) ([]Done, context.CancelFunc) {
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	expired, cancelExpired := context.WithDeadline(ctx, time.Unix(0, 0))
	return []Done{
		{"cancelled", "a cancelled context", cancelled, context.Canceled},
		{"expired", "an expired context", expired, context.DeadlineExceeded},
	}, cancelExpired
}
