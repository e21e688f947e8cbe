package storetest_test

import (
	"context"
	"fmt"
	"strings"
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

// deaf keeps content but ignores its contexts.
type deaf struct{ m *spill.Memory }

func (d deaf) Put(_ context.Context, key string, content []byte) error {
	return d.m.Put(context.Background(), key, content)
}

func (d deaf) Get(_ context.Context, key string) ([]byte, error) {
	return d.m.Get(context.Background(), key)
}

// A store that goes on with a done context fails that check, and only
// that one.
func TestStoreDeafToContext(t *testing.T) {
	err := storetest.TestStore(func() (spill.Store, error) { return deaf{&spill.Memory{}}, nil })
	if err == nil {
		t.Fatal("a store that ignores its context passed")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "storetest: done context: ") || strings.Count(msg, "storetest: ") != 1 {
		t.Errorf("want failures of the check of done contexts only, got:\n%s", msg)
	}
	for _, want := range []string{
		"Put with a cancelled context", "Get after a Put with a cancelled context", "Get with a cancelled context",
		"Put with an expired context", "Get after a Put with an expired context", "Get with an expired context",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no failure for %q in:\n%v", want, err)
		}
	}
}

// In a test, each check is a subtest.
func TestRun(t *testing.T) {
	storetest.Run(t, func(t *testing.T) spill.Store { return spill.Dir(t.TempDir()) })
}
