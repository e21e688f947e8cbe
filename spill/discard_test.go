package spill_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// Discard takes a segment back: the pointer stops resolving, a store
// that is a Remover no longer holds it, and spilling the same messages
// again writes them again under the same key.
func TestSpillerDiscard(t *testing.T) {
	ctx := t.Context()
	for name, st := range map[string]spill.Remover{"memory": &spill.Memory{}, "dir": spill.Dir(t.TempDir())} {
		t.Run(name, func(t *testing.T) {
			sp := &spill.Spiller{Store: st}
			ms := []pruneguard.Message{{ID: "m1", Role: pruneguard.RoleUser, Content: []byte("hello")}}
			p, err := sp.SpillMessages(ctx, ms)
			require.NoError(t, err)
			var _ pruneguard.Discarder = sp
			require.NoError(t, sp.Discard(ctx, p))
			assert.False(t, sp.Resolvable(p))
			_, err = st.Get(ctx, p.Key)
			assert.ErrorIs(t, err, spill.ErrNotFound)
			require.NoError(t, st.Remove(ctx, p.Key), "removing nothing is no error")
			q, err := sp.SpillMessages(ctx, ms)
			require.NoError(t, err)
			assert.Equal(t, p, q)
			back, err := sp.Recall(ctx, q)
			require.NoError(t, err)
			assert.Equal(t, "hello", string(back[0].Content))
			// Another store's pointer is left alone.
			require.NoError(t, sp.Discard(ctx, pruneguard.Pointer{Store: "other", Key: q.Key}))
			assert.True(t, sp.Resolvable(q))
		})
	}
}
