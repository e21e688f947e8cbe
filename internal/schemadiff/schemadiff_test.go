package schemadiff

import (
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

func TestCompare(t *testing.T) {
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
		{"enum member dropped", `{"type":"object",
 "properties":{
  "severity":{"type":"string","enum":["SEV-1","SEV-2"]},
  "assignee_id":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]},
  "notify":{"type":"boolean"}},
 "required":["severity","assignee_id","notify"]}`, []string{`/properties/severity enum "SEV-3"`}},
		{"type changed", `{"type":"object",
 "properties":{
  "severity":{"type":"string","enum":["SEV-1","SEV-2","SEV-3"]},
  "assignee_id":{"type":"string"},
  "notify":{"type":"boolean"}},
 "required":["severity","assignee_id","notify"]}`, []string{`/properties/assignee_id required id`, `/properties/assignee_id type "object"`, `/properties/assignee_id property id`}},
		{"everything gone", `{}`, []string{"/ required severity", "/ required assignee_id", "/ required notify", `/ type "object"`, "/ property assignee_id", "/ property notify", "/ property severity"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compare([]byte(incident), []byte(tt.compressed))
			require.NoError(t, err)
			var s []string
			for _, l := range got {
				s = append(s, l.String())
			}
			assert.Equal(t, tt.want, s)
		})
	}
}

func TestCompareBadJSON(t *testing.T) {
	_, err := Compare([]byte(`{`), []byte(`{}`))
	assert.ErrorContains(t, err, "original schema")
	_, err = Compare([]byte(`{}`), []byte(`[`))
	assert.ErrorContains(t, err, "compressed schema")
}

func TestCompareNested(t *testing.T) {
	orig := `{"properties":{
  "mode":{"const":"fast"},
  "tags":{"type":"array","items":{"type":"string","enum":["a","b"]}},
  "target":{"anyOf":[{"type":"string"},{"type":"object","required":["id"]}]},
  "note":{"description":"free text"}}}`
	tests := []struct {
		name       string
		compressed string
		want       []string
	}{
		{"same", orig, nil},
		{"untyped root stays untyped", `{"properties":{"mode":{"const":"fast"},"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}},"target":{"anyOf":[{"type":"string"},{"type":"object","required":["id"]}]}}}`, nil},
		{"const changed", `{"properties":{"mode":{"const":"slow"},"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}},"target":{"anyOf":[{"type":"string"},{"type":"object","required":["id"]}]}}}`,
			[]string{`/properties/mode enum "fast"`}},
		{"items enum lost", `{"properties":{"mode":{"const":"fast"},"tags":{"type":"array","items":{"type":"string"}},"target":{"anyOf":[{"type":"string"},{"type":"object","required":["id"]}]}}}`,
			[]string{`/properties/tags/items enum "a"`, `/properties/tags/items enum "b"`}},
		{"anyOf branch lost", `{"properties":{"mode":{"const":"fast"},"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}},"target":{"anyOf":[{"type":"string"}]}}}`,
			[]string{`/properties/target/anyOf/1 required id`, `/properties/target/anyOf/1 type "object"`}},
		{"type widened", `{"properties":{"mode":{"const":"fast"},"tags":{"type":["array","null"],"items":{"type":"string","enum":["a","b"]}},"target":{"anyOf":[{"type":"string"},{"type":"object","required":["id"]}]}}}`,
			[]string{`/properties/tags type "array"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compare([]byte(orig), []byte(tt.compressed))
			require.NoError(t, err)
			var s []string
			for _, l := range got {
				s = append(s, l.String())
			}
			assert.Equal(t, tt.want, s)
		})
	}
}
