package schemadiff

import "testing"

// The seed's incident tool, compressed by dropping its descriptions: the
// common case on the per-turn path.
func BenchmarkCompareIncident(b *testing.B) {
	orig := []byte(incident)
	comp := []byte(`{"type":"object","properties":{"severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"]},"assignee_id":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},"notify":{"type":"boolean"}},"required":["severity","assignee_id","notify"]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compare(orig, comp); err != nil {
			b.Fatal(err)
		}
	}
}

// A recursive schema through $defs, compared with itself.
func BenchmarkCompareRecursive(b *testing.B) {
	s := []byte(`{"$defs":{"node":{"type":"object","properties":{"name":{"type":"string","maxLength":64},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["name"],"additionalProperties":false}},"$ref":"#/$defs/node"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compare(s, s); err != nil {
			b.Fatal(err)
		}
	}
}
