package storecheck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

type nameError struct{ name string }

func (e *nameError) Error() string { return "bad " + e.name }
func (e *nameError) Unwrap() error { return errNotFound }

var errNotFound = errors.New("not found")

func named(err error) error {
	return Named("Get", "k1", err, errNotFound, "*nameError", "key", func(e *nameError) string { return e.name })
}

func TestNamed(t *testing.T) {
	if err := named(&nameError{"k1"}); err != nil {
		t.Errorf("the right error refused: %v", err)
	}
	for want, err := range map[string]error{
		"succeeded":           nil,
		"does not match":      errors.New("other"),
		"is not a *nameError": fmt.Errorf("wrapped: %w", errNotFound),
		`names key "k2"`:      &nameError{"k2"},
	} {
		if got := named(err); got == nil || !strings.Contains(got.Error(), want) {
			t.Errorf("named(%v) = %v, want an error saying %q", err, got, want)
		}
	}
}

func TestJoinSome(t *testing.T) {
	var errs []error
	for i := range 12 {
		errs = append(errs, fmt.Errorf("failure %d", i), nil)
	}
	msg := JoinSome(errs).Error()
	if !strings.Contains(msg, "failure 7") || strings.Contains(msg, "failure 8") || !strings.Contains(msg, "and 4 more") {
		t.Errorf("JoinSome: %s", msg)
	}
	if JoinSome([]error{nil, nil}) != nil {
		t.Error("JoinSome of nils is not nil")
	}
}

func TestDoneContexts(t *testing.T) {
	dones, cancel := DoneContexts(context.Background())
	defer cancel()
	if len(dones) != 2 {
		t.Fatalf("%d done contexts, want 2", len(dones))
	}
	for _, d := range dones {
		if !errors.Is(d.Ctx.Err(), d.Want) {
			t.Errorf("%s: context error %v, want %v", d.Name, d.Ctx.Err(), d.Want)
		}
	}
}

func TestDescribeAndPrefix(t *testing.T) {
	if Describe(nil) != "nil" || Describe([]byte("ab")) != `"ab"` || !strings.HasPrefix(Describe(make([]byte, 40)), "40 bytes, sha256 ") {
		t.Error("Describe")
	}
	if a, b := Prefix(), Prefix(); a == b || !strings.HasPrefix(a, "storetest-") || len(a) != len("storetest-")+16+1 {
		t.Errorf("Prefix: %q %q", a, b)
	}
}
