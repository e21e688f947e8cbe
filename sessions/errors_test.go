package sessions_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pruneguard/pruneguard/sessions"
)

func TestErrorTexts(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&sessions.IDError{Op: "load", ID: "s1", Err: sessions.ErrNotFound}, `sessions: load "s1": not found`},
		{&sessions.IDError{Op: "save", ID: "s1", Err: context.Canceled}, `sessions: save "s1": context canceled`},
		{&sessions.ConflictError{Op: "save", ID: "s1", Expect: 3, Stored: 5}, `sessions: save "s1": version conflict: expected version 3, the store holds version 5`},
		{&sessions.ConflictError{Op: "save", ID: "s1", Expect: sessions.Absent, Stored: 5}, `sessions: save "s1": version conflict: expected a new session, the store holds version 5`},
		{&sessions.ConflictError{Op: "delete", ID: "s1", Expect: 3}, `sessions: delete "s1": version conflict: expected version 3, the store holds none`},
	} {
		assert.Equal(t, c.want, c.err.Error())
	}
}

func TestConflictMatches(t *testing.T) {
	var err error = &sessions.ConflictError{Op: "save", ID: "s1", Expect: 3, Stored: 5}
	assert.ErrorIs(t, err, sessions.ErrConflict)
	assert.NotErrorIs(t, err, sessions.ErrNotFound)
	var ce *sessions.ConflictError
	assert.True(t, errors.As(err, &ce))
}

func TestNextVersion(t *testing.T) {
	seen := map[sessions.Version]bool{}
	for range 1000 {
		v := sessions.Absent.Next()
		assert.NotEqual(t, sessions.Absent, v)
		assert.Less(t, uint64(v), uint64(1)<<62)
		assert.False(t, seen[v], "first version %d drawn twice", v)
		seen[v] = true
		assert.Equal(t, v+1, v.Next())
	}
}
