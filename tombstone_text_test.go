package pruneguard

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TombstoneText gives, for each tool, the text of the tombstone a
// decision makes when the tool's schema is withdrawn, mutating or not.
func TestTombstoneTextIsTheDecisionsText(t *testing.T) {
	c := schemaContext(t, Config{})
	d, err := c.Prune(Plan{DropSchemas: []string{"lookup", "update_incident"}})
	require.NoError(t, err)
	require.Len(t, d.Tombstones, 2)
	for _, ts := range d.Tombstones {
		assert.Equal(t, ts.Text, TombstoneText(ts.Tool, ts.Mutating), ts.Tool)
	}
	assert.NotEqual(t, TombstoneText("lookup", false), TombstoneText("lookup", true))
	assert.NotEqual(t, TombstoneText("lookup", false), TombstoneText("update_incident", false))
}
