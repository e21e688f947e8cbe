package storetest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/pruneguard/pruneguard/spill"
	"github.com/pruneguard/pruneguard/spill/storetest"
)

// Check a store outside of a test, or from TestMain.
func ExampleTestStore() {
	err := storetest.TestStore(func() (spill.Store, error) { return &spill.Memory{}, nil })
	fmt.Println(err)
	// Output: <nil>
}

// A store that forgets what it was given fails the round trip, among
// other checks; the error lists them all.
func ExampleTestStore_failure() {
	err := storetest.TestStore(func() (spill.Store, error) { return forgetful{}, nil })
	fmt.Println(err != nil)
	// Output: true
}

type forgetful struct{}

func (forgetful) Put(context.Context, string, []byte) error { return nil }
func (forgetful) Get(_ context.Context, key string) ([]byte, error) {
	return nil, &spill.KeyError{Op: "get", Key: key, Err: spill.ErrNotFound}
}

// In a test, each check is a subtest.
func TestRun(t *testing.T) {
	storetest.Run(t, func(t *testing.T) spill.Store { return spill.Dir(t.TempDir()) })
}
