package spill_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/pruneguard/pruneguard/spill"
)

func TestSealRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		key := rapid.StringMatching(`[a-z0-9_-]{1,128}`).Draw(t, "key")
		content := rapid.SliceOf(rapid.Byte()).Draw(t, "content")
		got, err := spill.Unseal(key, spill.Seal(key, content))
		require.NoError(t, err)
		assert.Equal(t, len(content), len(got))
		assert.Equal(t, string(content), string(got))
	})
}

func TestSealDetectsAnyFlippedBit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		content := rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "content")
		sealed := spill.Seal("key", content)
		i := rapid.IntRange(0, len(sealed)-1).Draw(t, "byte")
		bit := rapid.IntRange(0, 7).Draw(t, "bit")
		sealed[i] ^= 1 << bit
		_, err := spill.Unseal("key", sealed)
		assert.ErrorIs(t, err, spill.ErrCorrupt)
	})
}

func TestUnsealOtherKey(t *testing.T) {
	_, err := spill.Unseal("b", spill.Seal("a", []byte("x")))
	assert.ErrorIs(t, err, spill.ErrCorrupt)
	_, err = spill.Unseal("ab", spill.Seal("a", []byte("bx")))
	assert.ErrorIs(t, err, spill.ErrCorrupt)
}
