package pruneguard

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The ghost detector reads a schema's properties and their types by the
// keywords JSON Schema spells, exactly: "Properties" and "TYPE" are other
// keys, which a struct decoding matched.
func TestSchemaPropsExactKeywords(t *testing.T) {
	cases := map[string]map[string]uint8{
		`{"properties":{"path":{"type":"string"}}}`: {"path": kindString},
		`{"Properties":{"path":{"type":"string"}}}`: nil,
		`{"properties":{"path":{"TYPE":"string"}}}`: {"path": 0},
		`{"properties":null}`:                       nil,
		`[]`:                                        nil,
	}
	for schema, want := range cases {
		if got := schemaProps(json.RawMessage(schema)); !reflect.DeepEqual(got, want) {
			t.Errorf("schemaProps(%s) = %v, want %v", schema, got, want)
		}
	}
}
