package spill_test

import (
	"encoding/hex"
	"strings"
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

// Keys of any length are sealed: a length byte would wrap at 256.
func TestSealLongKeys(t *testing.T) {
	for _, n := range []int{1, 127, 128, 255, 256, 257, 300, 511, 512, 4096} {
		key := strings.Repeat("k", n)
		got, err := spill.Unseal(key, spill.Seal(key, []byte("content")))
		require.NoError(t, err, n)
		assert.Equal(t, "content", string(got), n)
		_, err = spill.Unseal(key[:n-1]+"j", spill.Seal(key, []byte("content")))
		assert.ErrorIs(t, err, spill.ErrCorrupt, n)
		if n >= 256 {
			_, err = spill.Unseal(key[:n%256], spill.Seal(key, []byte("content")))
			assert.ErrorIs(t, err, spill.ErrCorrupt, "a key is not taken for one of its length modulo 256 (%d)", n)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		key := rapid.StringN(0, 700, -1).Draw(t, "key")
		content := rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "content")
		sealed := spill.Seal(key, content)
		got, err := spill.Unseal(key, sealed)
		require.NoError(t, err)
		assert.Equal(t, string(content), string(got))
		i := rapid.IntRange(0, len(sealed)-1).Draw(t, "byte")
		sealed[i] ^= 1 << rapid.IntRange(0, 7).Draw(t, "bit")
		_, err = spill.Unseal(key, sealed)
		assert.ErrorIs(t, err, spill.ErrCorrupt)
		_, err = spill.Unseal(key, sealed[:i])
		assert.ErrorIs(t, err, spill.ErrCorrupt, "truncated")
	})
}

// A record of the first layout reads back as it always did.
func TestUnsealFirstLayout(t *testing.T) {
	// "pgspill\x01", the key's length and the key, the content's length,
	// its SHA-256, the content: as version 1 wrote it.
	v1, err := hex.DecodeString("706773706" + "96c6c01" + "016b" + "0000000000000002" +
		"fb8e20fc2e4c3f248c60c39bd652f3c1347298bb977b8b4d5903b85055620603" + "6162")
	require.NoError(t, err)
	got, err := spill.Unseal("k", v1)
	require.NoError(t, err)
	assert.Equal(t, "ab", string(got))
}
