package schemadiff

import (
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		schema, instance string
		want             Verdict
	}{
		{`true`, `1`, Valid},
		{`false`, `1`, Invalid},
		{`{}`, `{"a":[1,"x",null]}`, Valid},
		{`{"type":"object"}`, `[]`, Invalid},
		{`{"type":["integer","string"]}`, `"3"`, Valid},
		{`{"type":"integer"}`, `"3"`, Invalid},
		{`{"type":"integer"}`, `3.0`, Valid},
		{`{"type":"integer","nullable":true}`, `null`, Valid},
		{`{"enum":["fast","safe"]}`, `"off"`, Invalid},
		{`{"enum":["fast","safe"]}`, `"safe"`, Valid},
		{`{"const":1}`, `1.0`, Valid},
		{`{"minimum":2,"exclusiveMaximum":5}`, `5`, Invalid},
		{`{"$schema":"http://json-schema.org/draft-04/schema#","maximum":5,"exclusiveMaximum":true}`, `5`, Invalid},
		{`{"multipleOf":0.1}`, `0.3`, Valid},
		{`{"maxLength":2}`, `"héé"`, Invalid},
		{`{"pattern":"^[a-z]+$"}`, `"abc"`, Valid},
		{`{"pattern":"^[a-z]+$"}`, `"ab1"`, Invalid},
		{`{"pattern":"^(?i)x$"}`, `"x"`, Unknown},
		{`{"required":["mode"]}`, `{"other":1}`, Invalid},
		{`{"required":["mode"]}`, `"not an object"`, Valid},
		{`{"properties":{"mode":{"enum":["a"]}},"additionalProperties":false}`, `{"mode":"a"}`, Valid},
		{`{"properties":{"mode":{"enum":["a"]}},"additionalProperties":false}`, `{"mode":"a","x":1}`, Invalid},
		{`{"patternProperties":{"^x-":{"type":"string"}},"additionalProperties":{"type":"integer"}}`, `{"x-a":"s","b":2}`, Valid},
		{`{"patternProperties":{"^x-":{"type":"string"}},"additionalProperties":{"type":"integer"}}`, `{"x-a":1}`, Invalid},
		{`{"propertyNames":{"maxLength":3}}`, `{"abcd":1}`, Invalid},
		{`{"dependentRequired":{"a":["b"]}}`, `{"a":1}`, Invalid},
		{`{"dependencies":{"a":{"required":["c"]}}}`, `{"a":1,"c":2}`, Valid},
		{`{"items":{"type":"integer"}}`, `[1,2,"x"]`, Invalid},
		{`{"prefixItems":[{"type":"string"}],"items":false}`, `["a"]`, Valid},
		{`{"prefixItems":[{"type":"string"}],"items":false}`, `["a",1]`, Invalid},
		{`{"prefixItems":[{"type":"string"}]}`, `[1]`, Invalid},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}],"additionalItems":false}`, `["a",1]`, Invalid},
		{`{"uniqueItems":true}`, `[1,1.0]`, Invalid},
		{`{"contains":{"const":2},"minContains":2}`, `[2,1,2]`, Valid},
		{`{"contains":{"const":2},"maxContains":1}`, `[2,2]`, Invalid},
		{`{"allOf":[{"type":"object"},{"required":["a"]}]}`, `{}`, Invalid},
		{`{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `1`, Valid},
		{`{"oneOf":[{"type":"integer"},{"minimum":0}]}`, `1`, Invalid},
		{`{"oneOf":[{"type":"integer"},{"type":"string"}]}`, `"s"`, Valid},
		{`{"not":{"type":"string"}}`, `"s"`, Invalid},
		{`{"if":{"properties":{"a":{"const":1}}},"then":{"required":["b"]},"else":{"required":["c"]}}`, `{"a":1}`, Invalid},
		{`{"if":{"properties":{"a":{"const":1}}},"then":{"required":["b"]},"else":{"required":["c"]}}`, `{"a":2,"c":0}`, Valid},
		{`{"$defs":{"m":{"enum":["a","b"]}},"properties":{"mode":{"$ref":"#/$defs/m"}}}`, `{"mode":"c"}`, Invalid},
		{`{"definitions":{"m":{"enum":["a","b"]}},"properties":{"mode":{"$ref":"#/definitions/m"}}}`, `{"mode":"b"}`, Valid},
		{`{"$defs":{"m":{"$anchor":"mode","enum":["a"]}},"properties":{"mode":{"$ref":"#mode"}}}`, `{"mode":"z"}`, Invalid},
		{`{"properties":{"next":{"$ref":"#"}},"required":["v"]}`, `{"v":1,"next":{"v":2,"next":{}}}`, Invalid},
		{`{"$ref":"#"}`, `1`, Unknown},
		{`{"$ref":"https://example.com/remote"}`, `1`, Unknown},
		{`{"$dynamicRef":"#meta"}`, `1`, Unknown},
		{`{"format":"date"}`, `"tomorrow"`, Unknown},
		{`{"format":"date"}`, `7`, Valid},
		{`{"x-vendor":1}`, `1`, Unknown},
		{`{"unevaluatedProperties":false}`, `{}`, Unknown},
		{`{"type":"object","description":"d","title":"t","default":{}}`, `{}`, Valid},
		{`{"type":"object"}`, `{"a":`, Invalid},
		{`{"anyOf":[{"format":"x"},{"type":"integer"}]}`, `"s"`, Unknown},
		{`{"anyOf":[{"format":"x"},{"type":"string"}]}`, `"s"`, Valid},
	}
	for _, tt := range tests {
		v, err := NewValidator([]byte(tt.schema))
		if err != nil {
			t.Fatalf("%s: %v", tt.schema, err)
		}
		if got := v.Validate([]byte(tt.instance)); got != tt.want {
			t.Errorf("%s against %s = %v, want %v", tt.instance, tt.schema, got, tt.want)
		}
	}
	if _, err := NewValidator([]byte(`{`)); err == nil {
		t.Error("a schema that is not JSON is an error")
	}
}

// FuzzValidate: a validation never panics, ends, and says the same
// twice; and it agrees with Compare: an instance that a compression
// Compare finds lossless accepts (Valid) is never rejected for sure
// (Invalid) by the original, which accepts at least as much.
func FuzzValidate(f *testing.F) {
	f.Add(`{"properties":{"a":{"enum":[1,2]}},"required":["a"]}`, `{"properties":{"a":{"enum":[1]}},"required":["a"]}`, `{"a":1}`)
	f.Add(`{"$defs":{"x":{"$ref":"#/$defs/x"}},"$ref":"#/$defs/x"}`, `true`, `[]`)
	f.Add(`{"oneOf":[{"type":"string"},{"maxLength":1}]}`, `{"type":"string","minLength":2}`, `"ab"`)
	f.Add(`{"items":{"type":"integer"},"maxItems":3}`, `{"prefixItems":[{"const":1}],"items":false}`, `[1]`)
	f.Fuzz(func(t *testing.T, orig, compressed, instance string) {
		vo, err := NewValidator([]byte(orig))
		if err != nil {
			return
		}
		got := vo.Validate([]byte(instance))
		if again := vo.Validate([]byte(instance)); again != got {
			t.Fatalf("%s against %s: %v, then %v", instance, orig, got, again)
		}
		vc, err := NewValidator([]byte(compressed))
		if err != nil || got != Invalid {
			return
		}
		if losses, err := Compare([]byte(orig), []byte(compressed)); err == nil && len(losses) == 0 && vc.Validate([]byte(instance)) == Valid {
			t.Fatalf("%s: %s rejects it, its lossless compression %s accepts it", instance, orig, compressed)
		}
	})
}
