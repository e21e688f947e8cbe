package schemadiff

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A compressed schema whose unevaluatedProperties or unevaluatedItems
// stands beside a oneOf or an if-then-else is read, once split on the
// branch an instance matched, with that branch evaluating what it lists:
// weakening what the branch applies is a loss, and the witness shows the
// original rejects what the compressed schema lets through.
func TestUnevaluatedBesideBranchTaken(t *testing.T) {
	tests := []struct {
		name, orig, comp, witness string
		want                      []string
	}{
		{"oneOf, properties through an escaped $defs pointer",
			`{"$defs":{"t~":false},"oneOf":[{"type":"number"},{"properties":{"a":{"$ref":"#/$defs/t~0"}}}],"unevaluatedProperties":false}`,
			`{"$defs":{"t~":{}},"oneOf":[{"type":"number"},{"properties":{"a":{"$ref":"#/$defs/t~0"}}}],"unevaluatedProperties":false}`,
			`{"a":1}`, []string{"/oneOf/1/properties/a/$ref false", "/unevaluatedProperties false"}},
		{"oneOf, properties",
			`{"oneOf":[{"type":"number"},{"properties":{"a":{"type":"string"}}}],"unevaluatedProperties":false}`,
			`{"oneOf":[{"type":"number"},{"properties":{"a":{}}}],"unevaluatedProperties":false}`,
			`{"a":1}`, []string{`/oneOf/1/properties/a type "string"`, "/unevaluatedProperties false"}},
		{"oneOf, propertyNames under a property",
			`{"oneOf":[{"type":"number"},{"properties":{"a":{"propertyNames":{"maxLength":1}}}}],"unevaluatedProperties":false}`,
			`{"oneOf":[{"type":"number"},{"properties":{"a":{}}}],"unevaluatedProperties":false}`,
			`{"a":{"bb":1}}`, []string{"/oneOf/1/properties/a propertyNames", "/unevaluatedProperties false"}},
		{"oneOf, additionalProperties",
			`{"oneOf":[{"type":"number"},{"additionalProperties":{"type":"string"}}],"unevaluatedProperties":false}`,
			`{"oneOf":[{"type":"number"},{"additionalProperties":{}}],"unevaluatedProperties":false}`,
			`{"a":1}`, []string{`/oneOf/1/additionalProperties type "string"`, "/unevaluatedProperties false"}},
		{"oneOf, patternProperties",
			`{"oneOf":[{"type":"number"},{"patternProperties":{"^a":{"type":"string"}}}],"unevaluatedProperties":false}`,
			`{"oneOf":[{"type":"number"},{"patternProperties":{"^a":{}}}],"unevaluatedProperties":false}`,
			`{"ab":1}`, []string{`/oneOf/1/patternProperties/^a type "string"`, "/unevaluatedProperties false"}},
		{"oneOf, dependentSchemas",
			`{"oneOf":[{"type":"number"},{"dependentSchemas":{"k":{"properties":{"a":{"type":"string"}}}}}],"properties":{"k":{}},"unevaluatedProperties":false}`,
			`{"oneOf":[{"type":"number"},{"dependentSchemas":{"k":{"properties":{"a":{}}}}}],"properties":{"k":{}},"unevaluatedProperties":false}`,
			`{"k":1,"a":1}`, []string{`/oneOf/1/dependentSchemas/k/properties/a type "string"`, "/unevaluatedProperties false"}},
		{"oneOf inside oneOf",
			`{"oneOf":[{"type":"number"},{"oneOf":[{"type":"string"},{"properties":{"a":{"type":"string"}}}]}],"unevaluatedProperties":false}`,
			`{"oneOf":[{"type":"number"},{"oneOf":[{"type":"string"},{"properties":{"a":{}}}]}],"unevaluatedProperties":false}`,
			`{"a":1}`, []string{`/oneOf/1/oneOf/1/properties/a type "string"`, "/unevaluatedProperties false"}},
		{"if-then, properties",
			`{"if":{"properties":{"k":{"const":1}},"required":["k"]},"then":{"properties":{"a":{"type":"string"}}},"unevaluatedProperties":false}`,
			`{"if":{"properties":{"k":{"const":1}},"required":["k"]},"then":{"properties":{"a":{}}},"unevaluatedProperties":false}`,
			`{"k":1,"a":1}`, []string{`/then/properties/a type "string"`}},
		{"if-else, properties",
			`{"if":{"required":["k"]},"else":{"properties":{"a":{"type":"string"}}},"unevaluatedProperties":false}`,
			`{"if":{"required":["k"]},"else":{"properties":{"a":{}}},"unevaluatedProperties":false}`,
			`{"a":1}`, []string{`/else/properties/a type "string"`}},
		{"oneOf, prefixItems",
			`{"oneOf":[{"type":"object"},{"prefixItems":[{"type":"string"}]}],"unevaluatedItems":false}`,
			`{"oneOf":[{"type":"object"},{"prefixItems":[{}]}],"unevaluatedItems":false}`,
			`[1]`, []string{`/oneOf/1/prefixItems/0 type "string"`, "/unevaluatedItems false"}},
		{"oneOf, items",
			`{"oneOf":[{"type":"object"},{"items":{"type":"string"}}],"unevaluatedItems":false}`,
			`{"oneOf":[{"type":"object"},{"items":{}}],"unevaluatedItems":false}`,
			`[1]`, []string{`/oneOf/1/items type "string"`, "/unevaluatedItems false"}},
		{"oneOf, contains",
			`{"oneOf":[{"type":"object"},{"contains":{"type":"string"}}],"unevaluatedItems":false}`,
			`{"oneOf":[{"type":"object"},{"contains":{}}],"unevaluatedItems":false}`,
			`[1]`, []string{`/oneOf/1 contains {"type":"string"}`, "/unevaluatedItems false"}},
		{"if-then, items",
			`{"if":{"minItems":1},"then":{"items":{"type":"string"}},"unevaluatedItems":false}`,
			`{"if":{"minItems":1},"then":{"items":{}},"unevaluatedItems":false}`,
			`[1]`, []string{`/then/items type "string"`}},
		{"if-else, prefixItems",
			`{"if":{"type":"object"},"else":{"prefixItems":[{"type":"string"}]},"unevaluatedItems":false}`,
			`{"if":{"type":"object"},"else":{"prefixItems":[{}]},"unevaluatedItems":false}`,
			`[1]`, []string{`/else/prefixItems/0 type "string"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := NewValidator([]byte(tt.orig))
			require.NoError(t, err)
			require.Equal(t, Invalid, v.Validate([]byte(tt.witness)), "the original rejects the witness")
			assert.Equal(t, tt.want, losses(t, tt.orig, tt.comp))
			assert.Empty(t, losses(t, tt.orig, tt.orig), "a schema keeps itself")
		})
	}
}
