package sessions_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/pruneguard/pruneguard/sessions"
)

// turn serves one turn of a conversation on any replica: load, work,
// save with the version loaded, and on a conflict start over.
func turn(ctx context.Context, store sessions.Store, id, said string) error {
	for {
		state, v, err := store.Load(ctx, id)
		if errors.Is(err, sessions.ErrNotFound) {
			state, v, err = nil, sessions.Absent, nil
		}
		if err != nil {
			return err
		}
		next := append(state, said...)
		_, err = store.Save(ctx, id, next, v)
		if errors.Is(err, sessions.ErrConflict) {
			continue
		}
		return err
	}
}

func Example() {
	ctx := context.Background()
	store := &sessions.Memory{}
	id := sessions.ID("acme", "conversation-7")
	for _, said := range []string{"hello; ", "how are you?"} {
		if err := turn(ctx, store, id, said); err != nil {
			fmt.Println(err)
		}
	}
	state, _, _ := store.Load(ctx, id)
	fmt.Printf("%s: %s\n", id, state)
	// Output: acme__conversation-7: hello; how are you?
}

// A replica that saves with a version another replica already moved on
// from gets a conflict, and the state stays as the winner left it.
func Example_conflict() {
	ctx := context.Background()
	store := &sessions.Memory{}
	v, _ := store.Save(ctx, "s1", []byte("turn 1"), sessions.Absent)
	if _, err := store.Save(ctx, "s1", []byte("turn 2 by replica a"), v); err != nil {
		fmt.Println(err)
	}
	_, err := store.Save(ctx, "s1", []byte("turn 2 by replica b"), v)
	fmt.Println(errors.Is(err, sessions.ErrConflict))
	state, _, _ := store.Load(ctx, "s1")
	fmt.Printf("%s\n", state)
	// Output:
	// true
	// turn 2 by replica a
}
