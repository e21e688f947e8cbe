package schemadiff

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const incident = `{"type":"object","description":"update an incident",
 "properties":{
  "severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"],"description":"level"},
  "assignee_id":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},
  "notify":{"type":"boolean"}},
 "required":["severity","assignee_id","notify"]}`

func losses(t *testing.T, orig, compressed string) []string {
	t.Helper()
	got, err := Compare([]byte(orig), []byte(compressed))
	require.NoError(t, err)
	var s []string
	for _, l := range got {
		s = append(s, l.String())
	}
	return s
}

func TestCompareIncident(t *testing.T) {
	tests := []struct {
		name       string
		compressed string
		want       []string
	}{
		{"descriptions only", `{"type":"object",
 "properties":{
  "severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"]},
  "assignee_id":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},
  "notify":{"type":"boolean"}},
 "required":["severity","assignee_id","notify"]}`, nil},
		{"required dropped", `{"type":"object",
 "properties":{
  "severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"]},
  "assignee_id":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},
  "notify":{"type":"boolean"}},
 "required":["severity","assignee_id"]}`, []string{"/ required notify"}},
		{"enum narrowed: stricter, not lossy", `{"type":"object",
 "properties":{
  "severity":{"type":"string","enum":["SEV-1","SEV-2"]},
  "assignee_id":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},
  "notify":{"type":"boolean"}},
 "required":["severity","assignee_id","notify"]}`, nil},
		{"enum widened", `{"type":"object",
 "properties":{
  "severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3","SEV-4"]},
  "assignee_id":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},
  "notify":{"type":"boolean"}},
 "required":["severity","assignee_id","notify"]}`, []string{`/properties/severity enum admits "SEV-4"`}},
		{"type changed (the seed's stale assignee_id)", `{"type":"object",
 "properties":{
  "severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"]},
  "assignee_id":{"type":"string"},
  "notify":{"type":"boolean"}},
 "required":["severity","assignee_id","notify"]}`, []string{`/properties/assignee_id type "object"`}},
		{"everything gone", `{}`, []string{
			"/ properties assignee_id", "/ properties notify", "/ properties severity",
			"/ required assignee_id", "/ required notify", "/ required severity", `/ type "object"`}},
		{"enum dropped names each member", `{"type":"object",
 "properties":{
  "severity":{"type":"string"},
  "assignee_id":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},
  "notify":{"type":"boolean"}},
 "required":["severity","assignee_id","notify"]}`, []string{
			`/properties/severity enum "SEV-1"`, `/properties/severity enum "SEV-2"`, `/properties/severity enum "SEV-3"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, losses(t, incident, tt.compressed))
		})
	}
}

func TestCompareBadJSON(t *testing.T) {
	for _, tt := range []struct{ orig, comp, want string }{
		{`{`, `{}`, "original schema"},
		{`{}`, `[`, "compressed schema"},
		{``, `{}`, "original schema"},
		{`{}`, `{} {}`, "compressed schema"},
		{`{} x`, `{}`, "original schema"},
	} {
		_, err := Compare([]byte(tt.orig), []byte(tt.comp))
		assert.ErrorContains(t, err, tt.want, "%q vs %q", tt.orig, tt.comp)
	}
}

// Compare shares nothing between calls: the race detector watches
// comparisons of the same bytes at once.
func TestCompareConcurrent(t *testing.T) {
	orig, comp := []byte(hostile[0].orig), []byte(hostile[0].comp)
	want, err := Compare(orig, comp)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				got, err := Compare(orig, comp)
				assert.NoError(t, err)
				assert.Equal(t, want, got)
			}
		}()
	}
	wg.Wait()
}

func TestLossString(t *testing.T) {
	assert.Equal(t, "/ required x", Loss{Kind: "required", What: "x"}.String())
	assert.Equal(t, "/properties/a not", Loss{Path: "/properties/a", Kind: "not"}.String())
}

func TestIsAnnotation(t *testing.T) {
	for _, k := range []string{"title", "description", "default", "examples", "deprecated", "writeOnly", "$comment"} {
		assert.True(t, IsAnnotation(k), k)
	}
	for _, k := range []string{"readOnly", "format", "pattern", "$ref", "x-custom", "contentEncoding", "type", "$defs", "nullable"} {
		assert.False(t, IsAnnotation(k), k)
	}
}

// Each annotation may go, and may change, without a loss; each keyword
// that is not one may not.
func TestAnnotationsGoFreely(t *testing.T) {
	for k := range annotations {
		orig := `{"type":"string","` + k + `":"x"}`
		assert.Empty(t, losses(t, orig, `{"type":"string"}`), k)
		assert.Empty(t, losses(t, orig, `{"type":"string","`+k+`":"y"}`), k)
	}
	for _, k := range []string{"format", "contentEncoding", "contentMediaType", "x-vendor", "strict"} {
		orig := `{"type":"string","` + k + `":"x"}`
		assert.Equal(t, []string{`/ ` + k + ` "x"`}, losses(t, orig, `{"type":"string"}`), k)
		assert.Equal(t, []string{`/ ` + k + ` "x"`}, losses(t, orig, `{"type":"string","`+k+`":"y"}`), k)
		assert.Empty(t, losses(t, orig, orig), k)
	}
}

// hostile lists, per keyword class, a compression that loses something
// (with the loss it must report) and, where there is one, a compression of
// the same class that keeps everything.
var hostile = []struct {
	class, orig, comp string
	want              []string
}{
	// References.
	{"$ref to $defs, target weakened", `{"$defs":{"a":{"type":"string","maxLength":5}},"properties":{"x":{"$ref":"#/$defs/a"}}}`,
		`{"properties":{"x":{"type":"string"}}}`, []string{"/properties/x/$ref maxLength 5"}},
	{"$ref inlined", `{"$defs":{"a":{"type":"string","maxLength":5}},"properties":{"x":{"$ref":"#/$defs/a"}}}`,
		`{"properties":{"x":{"type":"string","maxLength":5}}}`, nil},
	{"$ref retargeted to a stricter definition", `{"$defs":{"a":{"type":"string","maxLength":5}},"properties":{"x":{"$ref":"#/$defs/a"}}}`,
		`{"$defs":{"b":{"type":"string","maxLength":3}},"properties":{"x":{"$ref":"#/$defs/b"}}}`, nil},
	{"$ref in the compressed schema only, target looser", `{"properties":{"x":{"type":"string","maxLength":5}}}`,
		`{"$defs":{"b":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/b"}}}`, []string{"/properties/x maxLength 5"}},
	{"definitions (draft-07)", `{"definitions":{"id":{"type":"integer","minimum":1}},"properties":{"id":{"$ref":"#/definitions/id"}}}`,
		`{"properties":{"id":{"type":"integer"}}}`, []string{"/properties/id/$ref minimum 1"}},
	{"pointer escapes ~0 ~1 and %25", `{"$defs":{"a/b":{"type":"string"},"c~d":{"maxLength":2},"e%f":{"minLength":1}},"properties":{"x":{"$ref":"#/$defs/a~1b"},"y":{"$ref":"#/$defs/c~0d"},"z":{"$ref":"#/$defs/e%25f"}}}`,
		`{"properties":{"x":{},"y":{},"z":{}}}`, []string{`/properties/x/$ref type "string"`, "/properties/y/$ref maxLength 2", "/properties/z/$ref minLength 1"}},
	{"nested references", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/c"},"c":{"enum":[1,2]}},"$ref":"#/$defs/a"}`,
		`{"enum":[1,2,3]}`, []string{"/$ref/$ref/$ref enum admits 3"}},
	{"anchor", `{"$defs":{"a":{"$anchor":"pos","minimum":0}},"properties":{"n":{"$ref":"#pos"}}}`,
		`{"properties":{"n":{}}}`, []string{"/properties/n/$ref minimum 0"}},
	{"reference into items", `{"prefixItems":[{"type":"integer"}],"properties":{"n":{"$ref":"#/prefixItems/0"}}}`,
		`{"prefixItems":[{"type":"integer"}],"properties":{"n":{"type":"number"}}}`, []string{`/properties/n/$ref type "integer"`}},
	{"recursive schema, loss deep down", `{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"},"v":{"type":"integer"}}}},"$ref":"#/$defs/n"}`,
		`{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"},"v":{"type":"number"}}}},"$ref":"#/$defs/n"}`,
		[]string{`/$ref/properties/next/$ref/properties/v type "integer"`, `/$ref/properties/v type "integer"`}},
	{"recursive schema unrolled once", `{"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}},"required":["v"]}},"$ref":"#/$defs/n"}`,
		`{"type":"object","required":["v"],"properties":{"next":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}},"required":["v"]}}}`, nil},
	{"recursion through the root", `{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#"}}},"required":["name"]}`,
		`{"type":"object","properties":{"kids":{"type":"array","items":{"type":"object"}}},"required":["name"]}`,
		[]string{"/properties/kids/items/$ref properties kids", "/properties/kids/items/$ref required name"}},
	{"remote reference dropped", `{"properties":{"x":{"$ref":"https://example.com/s.json"}}}`,
		`{"properties":{"x":{}}}`, []string{"/properties/x $ref unresolved https://example.com/s.json"}},
	{"remote reference kept", `{"properties":{"x":{"$ref":"https://example.com/s.json"}}}`,
		`{"properties":{"x":{"$ref":"https://example.com/s.json"}}}`, nil},
	{"remote reference resolved against a different base", `{"$id":"https://a.example/s","properties":{"x":{"$ref":"t.json"}}}`,
		`{"$id":"https://b.example/s","properties":{"x":{"$ref":"t.json"}}}`, []string{"/properties/x $ref unresolved t.json"}},
	{"reference by the document's own $id", `{"$id":"https://a.example/s.json","$defs":{"a":{"maxItems":2}},"$ref":"https://a.example/s.json#/$defs/a"}`,
		`{}`, []string{"/$ref maxItems 2"}},
	{"dangling pointer", `{"$ref":"#/$defs/missing"}`, `{}`, []string{"/ $ref unresolved #/$defs/missing"}},
	{"unresolved reference in the compressed schema adds nothing", `{"maxLength":3}`,
		`{"$ref":"https://example.com/strict.json"}`, []string{"/ maxLength 3"}},
	{"reference inside an embedded resource", `{"$defs":{"e":{"$id":"https://x.example/e","$defs":{"i":{"type":"string"}},"$ref":"#/$defs/i"}},"$ref":"#/$defs/e"}`,
		`{"type":"string"}`, []string{"/$ref $ref unresolved #/$defs/i"}},
	{"draft-07 $ref hides its siblings in the compressed schema", `{"maxLength":3}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"s":{"type":"string"}},"$ref":"#/definitions/s","maxLength":3}`, []string{"/ maxLength 3"}},
	{"draft-07 $ref hides its siblings in the original", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"s":{"type":"string"}},"$ref":"#/definitions/s","maxLength":3}`,
		`{"type":"string"}`, nil},
	{"$dynamicRef", `{"$dynamicAnchor":"node","type":"object","properties":{"kids":{"type":"array","items":{"$dynamicRef":"#node"}}},"required":["id"]}`,
		`{"type":"object","properties":{"kids":{"type":"array"}},"required":["id"]}`, []string{"/properties/kids items"}},
	{"$recursiveRef", `{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,"type":"object","properties":{"kid":{"$recursiveRef":"#"}},"required":["id"]}`,
		`{"type":"object","properties":{"kid":{"type":"object"}},"required":["id"]}`,
		[]string{"/properties/kid/$recursiveRef properties kid", "/properties/kid/$recursiveRef required id"}},
	{"reference cycle with no instance between", `{"$ref":"#"}`, `{}`, []string{"/$ref $ref cycle that never reaches into the instance"}},
	{"reference cycle kept as it is", `{"$ref":"#","title":"a"}`, `{"$ref":"#"}`, nil},

	// Objects.
	{"additionalProperties false dropped", `{"properties":{"a":{}},"additionalProperties":false}`,
		`{"properties":{"a":{}}}`, []string{"/ additionalProperties"}},
	{"additionalProperties schema weakened", `{"additionalProperties":{"type":"integer"}}`,
		`{"additionalProperties":{"type":"number"}}`, []string{`/additionalProperties type "integer"`}},
	{"additionalProperties: a listed compressed property escapes it", `{"properties":{"a":{}},"additionalProperties":false}`,
		`{"properties":{"a":{},"b":{}},"additionalProperties":false}`, []string{"/additionalProperties false"}},
	{"additionalProperties kept by a closed compressed schema", `{"additionalProperties":{"type":"string"}}`,
		`{"properties":{"a":{"type":"string"}},"additionalProperties":false}`, nil},
	{"patternProperties dropped", `{"patternProperties":{"^x-":{"type":"string"}}}`,
		`{}`, []string{"/ patternProperties ^x-"}},
	{"patternProperties weakened", `{"patternProperties":{"^x-":{"type":"string","maxLength":9}}}`,
		`{"patternProperties":{"^x-":{"type":"string"}}}`, []string{"/patternProperties/^x- maxLength 9"}},
	{"patternProperties of the original covering a compressed property", `{"patternProperties":{"^x-":{"type":"string"}}}`,
		`{"properties":{"x-a":{"type":"string"}},"additionalProperties":false}`, nil},
	{"patternProperties against a compressed property it matches", `{"patternProperties":{"^x-":{"type":"string"}}}`,
		`{"properties":{"x-a":{"type":"number"}},"additionalProperties":false}`, []string{`/patternProperties/^x- type "string"`}},
	{"propertyNames dropped", `{"propertyNames":{"pattern":"^[a-z]+$"}}`, `{}`, []string{"/ propertyNames"}},
	{"propertyNames kept by closed names", `{"propertyNames":{"maxLength":3}}`,
		`{"properties":{"ab":{}},"additionalProperties":false}`, nil},
	{"propertyNames broken by a closed name", `{"propertyNames":{"maxLength":3}}`,
		`{"properties":{"abcd":{}},"additionalProperties":false}`, []string{"/ propertyNames"}},
	{"dependentRequired dropped", `{"dependentRequired":{"card":["cvv"]}}`, `{}`, []string{"/ dependentRequired card requires cvv"}},
	{"dependentRequired kept by required", `{"dependentRequired":{"card":["cvv"]}}`, `{"required":["cvv"]}`, nil},
	{"dependencies (draft-07 array) dropped", `{"dependencies":{"card":["cvv"]}}`, `{}`, []string{"/ dependencies card requires cvv"}},
	{"dependentSchemas weakened", `{"dependentSchemas":{"card":{"required":["cvv"],"properties":{"cvv":{"maxLength":4}}}}}`,
		`{"dependentSchemas":{"card":{"required":["cvv"]}}}`, []string{"/dependentSchemas/card properties cvv"}},
	{"dependentSchemas moot when the property is forbidden", `{"dependentSchemas":{"card":{"required":["cvv"]}}}`,
		`{"properties":{"card":false}}`, nil},
	{"dependencies (draft-07 schema) dropped", `{"dependencies":{"card":{"required":["cvv"]}}}`, `{}`, []string{"/dependencies/card required cvv"}},
	{"minProperties and maxProperties", `{"minProperties":1,"maxProperties":3}`, `{}`, []string{"/ maxProperties 3", "/ minProperties 1"}},
	{"minProperties kept by required", `{"minProperties":2}`, `{"required":["a","b"]}`, nil},
	{"maxProperties kept by closed names", `{"maxProperties":2}`, `{"properties":{"a":{},"b":{}},"additionalProperties":false}`, nil},
	{"unevaluatedProperties dropped", `{"allOf":[{"properties":{"a":{}}}],"unevaluatedProperties":false}`,
		`{"allOf":[{"properties":{"a":{}}}]}`, []string{"/ unevaluatedProperties"}},
	{"unevaluatedProperties replaced by additionalProperties", `{"allOf":[{"properties":{"a":{}}}],"unevaluatedProperties":false}`,
		`{"properties":{"a":{}},"additionalProperties":false}`, nil},

	// Arrays.
	{"prefixItems entry weakened", `{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}`,
		`{"type":"array","prefixItems":[{"type":"string"},{}]}`, []string{`/prefixItems/1 type "integer"`}},
	{"prefixItems entry dropped", `{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}`,
		`{"type":"array","prefixItems":[{"type":"string"}]}`, []string{"/ prefixItems 1"}},
	{"items false after prefixItems dropped", `{"type":"array","prefixItems":[{"type":"string"}],"items":false}`,
		`{"type":"array","prefixItems":[{"type":"string"}]}`, []string{"/ items"}},
	{"tuple form rewritten from draft-07 to 2020-12", `{"type":"array","items":[{"type":"string"}],"additionalItems":false}`,
		`{"type":"array","prefixItems":[{"type":"string"}],"items":false}`, nil},
	{"additionalItems beside prefixItems kept only as it is", `{"prefixItems":[{}],"additionalItems":false}`, `{"prefixItems":[{}]}`, []string{"/ additionalItems false"}},
	{"draft-04 id is no constraint", `{"$schema":"http://json-schema.org/draft-04/schema#","id":"http://x.example/s","type":"string"}`, `{"type":"string"}`, nil},
	{"additionalItems dropped", `{"items":[{"type":"string"}],"additionalItems":{"type":"integer"}}`,
		`{"items":[{"type":"string"}]}`, []string{"/ additionalItems"}},
	{"items schema weakened", `{"type":"array","items":{"type":"string","pattern":"^[a-z]+$"}}`,
		`{"type":"array","items":{"type":"string"}}`, []string{`/items pattern "^[a-z]+$"`}},
	{"items against a longer compressed tuple", `{"items":{"type":"string"}}`,
		`{"prefixItems":[{"type":"string"},{}],"items":{"type":"string"}}`, []string{`/items type "string"`}},
	{"maxItems caps a tuple", `{"prefixItems":[{"type":"string"},{"type":"integer"}]}`,
		`{"prefixItems":[{"type":"string"}],"maxItems":1}`, nil},
	{"minItems maxItems uniqueItems", `{"minItems":1,"maxItems":5,"uniqueItems":true}`, `{}`,
		[]string{"/ maxItems 5", "/ minItems 1", "/ uniqueItems true"}},
	{"contains dropped", `{"contains":{"const":"x"}}`, `{}`, []string{`/ contains {"const":"x"}`}},
	{"minContains lowered", `{"contains":{"type":"string"},"minContains":2}`, `{"contains":{"type":"string"}}`, []string{"/ minContains 2"}},
	{"maxContains dropped", `{"contains":{"type":"string"},"maxContains":2}`, `{"contains":{"type":"string"}}`, []string{"/ maxContains 2"}},
	{"contains kept by every item", `{"contains":{"type":"string"}}`, `{"items":{"type":"string"},"minItems":1}`, nil},
	{"contains kept by a leading item", `{"contains":{"const":"x"}}`, `{"prefixItems":[{"const":"x"}],"minItems":1}`, nil},
	{"minItems kept by contains", `{"minItems":1}`, `{"contains":{}}`, nil},
	{"properties moot when an object has none", `{"additionalProperties":false,"properties":{"a":{"type":"string"}}}`, `{"propertyNames":false}`, nil},
	{"unevaluatedItems dropped", `{"prefixItems":[{}],"unevaluatedItems":false}`, `{"prefixItems":[{}]}`, []string{"/ unevaluatedItems"}},

	// Strings and numbers.
	{"pattern dropped", `{"type":"string","pattern":"^[0-9]{3}$"}`, `{"type":"string"}`, []string{`/ pattern "^[0-9]{3}$"`}},
	{"pattern changed", `{"type":"string","pattern":"^[0-9]{3}$"}`, `{"type":"string","pattern":"^[0-9]+$"}`, []string{`/ pattern "^[0-9]{3}$"`}},
	{"pattern kept by an enum that matches it", `{"type":"string","pattern":"^[0-9]{3}$"}`, `{"enum":["123","456"]}`, nil},
	{"pattern against an enum that does not match", `{"type":"string","pattern":"^[0-9]{3}$"}`, `{"enum":["123","4567"]}`, []string{`/ pattern "^[0-9]{3}$"`}},
	{"format dropped", `{"type":"string","format":"date-time"}`, `{"type":"string"}`, []string{`/ format "date-time"`}},
	{"minLength maxLength", `{"minLength":2,"maxLength":8}`, `{"minLength":1,"maxLength":9}`, []string{"/ maxLength 8", "/ minLength 2"}},
	{"length limits tightened", `{"minLength":2,"maxLength":8}`, `{"minLength":3,"maxLength":7}`, nil},
	{"minimum maximum", `{"minimum":0,"maximum":100}`, `{"minimum":-1,"maximum":100.5}`, []string{"/ maximum 100", "/ minimum 0"}},
	{"exclusive bounds", `{"exclusiveMinimum":0,"exclusiveMaximum":10}`, `{"minimum":0,"maximum":10}`, []string{"/ exclusiveMaximum 10", "/ exclusiveMinimum 0"}},
	{"exclusive bound keeps an inclusive one", `{"minimum":0,"maximum":10}`, `{"exclusiveMinimum":0,"exclusiveMaximum":10}`, nil},
	{"draft-04 boolean exclusiveMaximum", `{"$schema":"http://json-schema.org/draft-04/schema#","maximum":10,"exclusiveMaximum":true}`,
		`{"maximum":10}`, []string{"/ maximum 10"}},
	{"huge numbers", `{"maximum":1e400,"minimum":-1e400}`, `{"maximum":1e401,"minimum":-1e399}`, []string{"/ maximum 1e400"}},
	{"multipleOf weakened", `{"multipleOf":4}`, `{"multipleOf":2}`, []string{"/ multipleOf 4"}},
	{"multipleOf kept by a multiple", `{"multipleOf":0.5}`, `{"multipleOf":1.5}`, nil},
	{"multipleOf kept by integer", `{"multipleOf":0.25}`, `{"type":"integer"}`, nil},
	{"const dropped", `{"const":"v1"}`, `{"type":"string"}`, []string{`/ const "v1"`}},
	{"const changed", `{"const":"v1"}`, `{"const":"v2"}`, []string{`/ const "v1"`}},
	{"const as a one-member enum, 1 as 1.0", `{"const":1}`, `{"enum":[1.0]}`, nil},

	// Types.
	{"type widened by an array", `{"type":"string"}`, `{"type":["string","null"]}`, []string{`/ type "string"`}},
	{"type widened by nullable", `{"type":"string"}`, `{"type":"string","nullable":true}`, []string{`/ type "string"`}},
	{"nullable read as a type array", `{"type":"string","nullable":true}`, `{"type":["string","null"]}`, nil},
	{"integer is not number", `{"type":"integer"}`, `{"type":"number"}`, []string{`/ type "integer"`}},
	{"number kept by integer", `{"type":"number"}`, `{"type":"integer"}`, nil},
	{"type kept by an enum", `{"type":"string"}`, `{"enum":["a","b"]}`, nil},

	{"Optional as anyOf, compressed to a type array", `{"anyOf":[{"type":"string","maxLength":5},{"type":"null"}]}`, `{"type":["string","null"],"maxLength":5}`, nil},
	{"Optional as oneOf, compressed to nullable", `{"oneOf":[{"type":"string"},{"type":"null"}]}`, `{"type":"string","nullable":true}`, nil},
	{"Optional as anyOf, the string side weakened", `{"anyOf":[{"type":"string","maxLength":5},{"type":"null"}]}`, `{"type":["string","null"]}`, []string{"/anyOf/0 maxLength 5"}},
	{"Optional as a type array, compressed to anyOf", `{"type":["string","null"],"maxLength":5}`, `{"anyOf":[{"type":"string","maxLength":5},{"type":"null"}]}`, nil},

	// Applicators.
	{"allOf member dropped", `{"allOf":[{"required":["a"]},{"required":["b"]}]}`, `{"allOf":[{"required":["a"]}]}`, []string{"/allOf/1 required b"}},
	{"allOf flattened", `{"allOf":[{"required":["a"]},{"required":["b"]}]}`, `{"required":["a","b"]}`, nil},
	{"anyOf branch weakened", `{"anyOf":[{"type":"string","maxLength":5},{"type":"integer"}]}`,
		`{"anyOf":[{"type":"string"},{"type":"integer"}]}`, []string{"/anyOf/0 maxLength 5"}},
	{"anyOf branch dropped: stricter", `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `{"anyOf":[{"type":"string"}]}`, nil},
	{"anyOf dropped", `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `{}`, []string{`/anyOf/0 type "string"`}},
	{"oneOf branch weakened", `{"oneOf":[{"type":"string","enum":["a"]},{"type":"integer"}]}`,
		`{"oneOf":[{"type":"string"},{"type":"integer"}]}`, []string{`/oneOf/0 enum "a"`}},
	{"oneOf made inclusive", `{"oneOf":[{"type":"integer"},{"minimum":5}]}`, `{"type":"integer"}`, []string{"/ oneOf branches no longer exclusive"}},
	{"oneOf down to one exclusive branch", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `{"type":"string"}`, nil},
	{"oneOf discriminated by a const", `{"oneOf":[{"properties":{"kind":{"const":"a"}},"required":["kind"]},{"properties":{"kind":{"const":"b"},"n":{"type":"integer"}},"required":["kind","n"]}]}`,
		`{"type":"object","properties":{"kind":{"const":"b"},"n":{"type":"integer"}},"required":["kind","n"]}`, nil},
	{"not dropped", `{"not":{"required":["legacy"]}}`, `{}`, []string{"/ not"}},
	{"not narrowed", `{"not":{"enum":["a","b"]}}`, `{"not":{"enum":["a"]}}`, []string{"/ not"}},
	{"not widened: stricter", `{"not":{"enum":["a"]}}`, `{"not":{"enum":["a","b"]}}`, nil},
	{"not kept by a disjoint type", `{"not":{"type":"string"}}`, `{"type":"integer"}`, nil},
	{"if-then-else dropped", `{"if":{"properties":{"a":{"const":1}},"required":["a"]},"then":{"required":["b"]},"else":{"required":["c"]}}`,
		`{}`, []string{"/else required c", "/then required b"}},
	{"then weakened", `{"if":{"properties":{"a":{"const":1}},"required":["a"]},"then":{"required":["b"]}}`,
		`{"if":{"properties":{"a":{"const":1}},"required":["a"]},"then":{}}`, []string{"/then required b"}},
	{"if changed", `{"if":{"properties":{"a":{"const":1}},"required":["a"]},"then":{"required":["b"]}}`,
		`{"if":{"properties":{"a":{"const":2}},"required":["a"]},"then":{"required":["b"]}}`, []string{"/then required b"}},
	{"then kept unconditionally", `{"if":{"required":["a"]},"then":{"required":["b"]}}`, `{"required":["b"]}`, nil},

	// Boolean schemas.
	{"false property opened", `{"properties":{"a":false}}`, `{"properties":{"a":true}}`, []string{"/properties/a false"}},
	{"false root opened", `false`, `{}`, []string{"/ false"}},
	{"true root closed is a withdrawal", `true`, `false`, []string{"/ false compressed schema accepts nothing"}},
	{"compression that forbids everything", `{"type":"object"}`, `{"type":"object","not":{}}`, []string{"/ false compressed schema accepts nothing"}},
	{"compression with crossed bounds", `{"type":"string"}`, `{"type":"string","minLength":3,"maxLength":2}`, []string{"/ false compressed schema accepts nothing"}},
	{"compression with exclusive types", `{"type":"string"}`, `{"allOf":[{"type":"string"},{"type":"integer"}]}`, []string{"/ false compressed schema accepts nothing"}},
	{"crossed bounds of one kind leave the others", `{"maxLength":3}`, `{"minLength":3,"maxLength":2}`, nil},
	{"empty enum compression", `{"type":"string"}`, `{"enum":[]}`, []string{"/ false compressed schema accepts nothing"}},

	// unevaluatedProperties and unevaluatedItems beside applicators.
	{"unevaluatedProperties with anyOf, kept", `{"anyOf":[{"properties":{"a":{"type":"string"}}},{"properties":{"b":{"type":"integer"}}}],"unevaluatedProperties":false,"title":"t"}`,
		`{"anyOf":[{"properties":{"a":{"type":"string","maxLength":3}}},{"properties":{"b":{"type":"integer"}}}],"unevaluatedProperties":false}`, nil},
	{"unevaluatedProperties with anyOf, a branch weakened", `{"anyOf":[{"properties":{"a":{}}},{"properties":{"b":{"type":"string"}}}],"unevaluatedProperties":false}`,
		`{"anyOf":[{"properties":{"a":{}}},{"properties":{"b":{}}}],"unevaluatedProperties":false}`, []string{"/unevaluatedProperties false"}},
	{"unevaluatedProperties with oneOf branches inlined", `{"$defs":{"a":{"properties":{"kind":{"const":"a"},"x":{}},"required":["kind"]},"b":{"properties":{"kind":{"const":"b"},"y":{}},"required":["kind"]}},"oneOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/b"}],"unevaluatedProperties":false}`,
		`{"oneOf":[{"properties":{"kind":{"const":"a"},"x":{}},"required":["kind"]},{"properties":{"kind":{"const":"b"},"y":{}},"required":["kind"]}],"unevaluatedProperties":false}`, nil},
	{"unevaluatedProperties with if-then-else", `{"if":{"properties":{"a":{"const":1}},"required":["a"]},"then":{"properties":{"b":{}}},"else":{"properties":{"c":{}}},"unevaluatedProperties":false}`,
		`{"if":{"properties":{"a":{"const":1}},"required":["a"]},"then":{"properties":{"b":{}}},"else":{"properties":{"c":{}}},"unevaluatedProperties":{"type":"string"}}`, []string{"/unevaluatedProperties false"}},
	{"unevaluatedProperties with dependentSchemas", `{"dependentSchemas":{"card":{"properties":{"cvv":{"type":"string"}}}},"properties":{"card":{}},"unevaluatedProperties":false}`,
		`{"dependentSchemas":{"card":{"properties":{"cvv":{"type":"string"}}}},"properties":{"card":{"type":"string"}},"unevaluatedProperties":false}`, nil},
	{"unevaluatedItems with contains", `{"contains":{"type":"string"},"unevaluatedItems":{"type":"integer"}}`,
		`{"contains":{"type":"string"},"unevaluatedItems":{"type":"number"}}`, []string{"/ unevaluatedItems"}},
	{"unevaluatedItems closed by items", `{"prefixItems":[{"type":"string"}],"unevaluatedItems":false}`,
		`{"prefixItems":[{"type":"string"}],"items":false}`, nil},

	// Others.
	{"readOnly dropped", `{"properties":{"id":{"readOnly":true}}}`, `{"properties":{"id":{}}}`, []string{"/properties/id readOnly true"}},
	{"unknown keyword dropped", `{"x-max-cost":5}`, `{}`, []string{"/ x-max-cost 5"}},
	{"contentEncoding dropped", `{"type":"string","contentEncoding":"base64"}`, `{"type":"string"}`, []string{`/ contentEncoding "base64"`}},
	{"property name with a slash", `{"properties":{"a/b":{"type":"string"}}}`, `{"properties":{"a/b":{}}}`, []string{`/properties/a~1b type "string"`}},
}

func TestCompareHostile(t *testing.T) {
	for _, tt := range hostile {
		t.Run(tt.class, func(t *testing.T) {
			assert.Equal(t, tt.want, losses(t, tt.orig, tt.comp))
		})
	}
}

// Every schema keeps every constraint of itself, and the order of the
// losses does not depend on map order.
func TestCompareIdentity(t *testing.T) {
	for _, tt := range hostile {
		for _, s := range []string{tt.orig, tt.comp} {
			if strings.Contains(s, `"$ref":"#"}`) && !strings.Contains(s, "properties") {
				continue // a bare cycle is a loss even against itself
			}
			assert.Empty(t, losses(t, s, s), s)
		}
		first := losses(t, tt.orig, tt.comp)
		for range 5 {
			require.Equal(t, first, losses(t, tt.orig, tt.comp))
		}
	}
}

func TestCompareLimits(t *testing.T) {
	// Deep but unchanged: a copy is recognised whatever its depth.
	deep := func(leaf string) string {
		return strings.Repeat(`{"properties":{"a":`, 2000) + leaf + strings.Repeat(`}}`, 2000)
	}
	assert.Empty(t, losses(t, deep(`{"type":"string","maxLength":3}`), deep(`{"type":"string","maxLength":3,"description":"x"}`)))
	// Deep and changed at the bottom: the walk stops at its depth limit
	// and reports it.
	got, err := Compare([]byte(deep(`{"type":"string","maxLength":3}`)), []byte(deep(`{"type":"string"}`)))
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(got, func(l Loss) bool { return l.Kind == "limit" }), "%v", got)

	// A lossy reference graph whose paths double at each level is
	// compared once per pair, not once per path.
	var b strings.Builder
	b.WriteString(`{"$defs":{`)
	for i := range 40 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"d` + itoa(i) + `":{"properties":{"l":{"$ref":"#/$defs/d` + itoa(i+1) + `"},"r":{"$ref":"#/$defs/d` + itoa(i+1) + `"}}}`)
	}
	b.WriteString(`,"d40":{"maxLength":1}},"$ref":"#/$defs/d0"}`)
	assert.Equal(t, []string{"/$ref properties l", "/$ref properties r"}, losses(t, b.String(), `{}`))
	looser := strings.Replace(b.String(), `"d40":{"maxLength":1}`, `"d40":{"maxLength":2}`, 1)
	got2 := losses(t, b.String(), looser)
	require.Contains(t, got2, "/ limit more losses not listed", "2^40 paths to one loss are listed up to a bound")
	require.LessOrEqual(t, len(got2), maxLosses+1)
	assert.Contains(t, got2, "/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref/properties/l/$ref maxLength 1")

	// Too many places to compare: the step budget runs out.
	var many strings.Builder
	many.WriteString(`{"properties":{`)
	for i := range maxSteps + 10 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"p` + itoa(i) + `":{"type":"string"}`)
	}
	many.WriteString(`}}`)
	got, err = Compare([]byte(many.String()), []byte(`{"additionalProperties":{"type":"string","maxLength":1}}`))
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(got, func(l Loss) bool { return l.Kind == "limit" }), "%v", got)
}
