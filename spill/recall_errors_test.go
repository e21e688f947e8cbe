package spill_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// Arguments that name no key are the model's mistake, whatever their shape.
func TestHandleRecallNoKey(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{Store: &spill.Memory{}}
	for _, bad := range []string{`null`, `{"key":null}`, `{"Key":null}`, `{"key":[]}`, `{"key":{}}`, `{"key":"x"`} {
		_, err := s.HandleRecall(ctx, json.RawMessage(bad))
		assert.ErrorIs(t, err, spill.ErrBadRecall, bad)
	}
	for _, empty := range []string{`{"key":""}`, `{"key":"  "}`, `{"key":"spill:"}`} {
		_, err := s.HandleRecall(ctx, json.RawMessage(empty))
		assert.Error(t, err, empty)
		assert.NotErrorIs(t, err, spill.ErrCorrupt, empty)
	}
}

func TestHandleRecallZeroSpiller(t *testing.T) {
	ctx := t.Context()
	var s spill.Spiller
	_, err := s.HandleRecall(ctx, json.RawMessage(`{"key":"seg-1"}`))
	assert.ErrorIs(t, err, spill.ErrNoStore)
}

// A segment whose file was deleted is not found; one whose bytes were
// replaced is corrupt; neither answers content.
func TestHandleRecallDirDamaged(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := &spill.Spiller{Store: spill.Dir(dir)}
	p, err := s.SpillMessages(ctx, []pruneguard.Message{{ID: "m1", Role: pruneguard.RoleUser, Content: []byte("ticket 4711")}})
	require.NoError(t, err)
	args, _ := json.Marshal(map[string]string{"key": p.Key})
	out, err := s.HandleRecall(ctx, args)
	require.NoError(t, err)
	assert.Contains(t, out, "ticket 4711")

	files, err := filepath.Glob(filepath.Join(dir, "*"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)

	// Other bytes, same length: a flipped bit in the middle.
	bad := append([]byte(nil), data...)
	bad[len(bad)/2] ^= 1
	require.NoError(t, os.WriteFile(files[0], bad, 0o600))
	for _, r := range []*spill.Spiller{s, {Store: spill.Dir(dir)}} {
		_, err = r.HandleRecall(ctx, args)
		assert.ErrorIs(t, err, spill.ErrCorrupt)
	}

	// A Spiller remembers a segment it found corrupt; one that never read
	// it finds the file gone.
	require.NoError(t, os.Remove(files[0]))
	for _, r := range []*spill.Spiller{{Store: spill.Dir(dir)}} {
		_, err = r.HandleRecall(ctx, args)
		assert.ErrorIs(t, err, spill.ErrNotFound)
		_, err = r.Recall(ctx, p)
		assert.ErrorIs(t, err, spill.ErrNotFound)
	}
}

// A forgotten key fails as an unknown one does.
func TestHandleRecallForgotten(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{Store: &spill.Memory{}}
	p, err := s.SpillMessages(ctx, []pruneguard.Message{{ID: "m1", Content: []byte("x")}})
	require.NoError(t, err)
	s.Forget(p)
	_, err = s.HandleRecall(ctx, json.RawMessage(`{"key":"`+p.Key+`"}`))
	assert.ErrorIs(t, err, spill.ErrNotFound)
	assert.False(t, s.Resolvable(p))
}

// A segment read back once and then deleted is not answered from memory.
func TestHandleRecallDeletedAfterRead(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := &spill.Spiller{Store: spill.Dir(dir)}
	p, err := s.SpillMessages(ctx, []pruneguard.Message{{ID: "m1", Content: []byte("x")}})
	require.NoError(t, err)
	args := json.RawMessage(`{"key":"` + p.Key + `"}`)
	_, err = s.HandleRecall(ctx, args)
	require.NoError(t, err)
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	require.Len(t, files, 1)
	require.NoError(t, os.Remove(files[0]))
	_, err = s.HandleRecall(ctx, args)
	assert.ErrorIs(t, err, spill.ErrNotFound)
}

// The arguments' keys are the schema's, exactly, each once: a key spelt in
// another case is no key, and a key given twice is refused, where
// encoding/json matched "Key" for "key" and took the last of two.
func TestHandleRecallExactKeys(t *testing.T) {
	ctx := t.Context()
	s := &spill.Spiller{Store: &spill.Memory{}}
	p, err := s.SpillMessages(ctx, []pruneguard.Message{{ID: "m1", Role: pruneguard.RoleTool, Content: []byte("ticket INC-4711")}})
	require.NoError(t, err)
	good, err := json.Marshal(map[string]string{"key": p.Key})
	require.NoError(t, err)
	_, err = s.HandleRecall(ctx, good)
	require.NoError(t, err)
	for _, bad := range []string{
		`{"Key":"` + p.Key + `"}`,
		`{"KEY":"` + p.Key + `"}`,
		`{"key":"seg-none","key":"` + p.Key + `"}`,
		`{"query":"INC-4711","query":"INC-4711"}`,
		`{"key":"` + p.Key + `","page":1,"page":2}`,
	} {
		_, err := s.HandleRecall(ctx, json.RawMessage(bad))
		assert.ErrorIs(t, err, spill.ErrBadRecall, bad)
	}
}
