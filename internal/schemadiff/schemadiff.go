// Package schemadiff finds what a compressed JSON Schema lost against the
// original: the constraints a model that sees only the compressed schema
// no longer knows, so that it may build arguments the original rejects.
// Compared the other way round (Compare(compressed, orig)), the losses
// are what the compression narrows: constraints it adds, under which
// arguments the original accepts may be invalid; a [Validator] says
// whether given arguments are.
//
// # What counts as a loss
//
// A compression is lossless when every instance it accepts is accepted by
// the original. Dropping or weakening any constraint is a loss; adding or
// tightening one is not (a narrower enum, a lower maximum, an extra
// required property: the model can still build only valid arguments).
// The one exception: a compressed schema that plainly accepts nothing at
// all (false, {"not": {}}, an empty enum, types that exclude each other,
// bounds that cross) while the original accepts something withdraws the
// schema in all but name, and is reported as a "false" loss at the root.
//
// Every keyword is a constraint except the annotations listed by
// [IsAnnotation] (the 2020-12 meta-data vocabulary less readOnly, and
// $comment) and the structural keywords that only hold or name schemas
// ($schema, $id, $anchor, $dynamicAnchor, $recursiveAnchor, $vocabulary,
// $defs, definitions). format, contentEncoding, contentMediaType and the
// keywords the package does not know are kept only by the same keyword
// with an equal value in the compressed schema at the same place.
//
// # How it is judged
//
// Compare proves, place by place, that the compressed schema is at least
// as strict as the original, and reports what it cannot prove; it may
// report a loss that a cleverer proof would rule out, never the reverse.
// A schema of the compressed side that differs from the original one at
// the same place only in annotations (references followed) keeps
// everything, at any depth. Otherwise a constraint may be kept by any
// schema that applies at the same place of the instance: the same keyword
// with an equal or stricter value, an allOf member, a reference target, a
// conjunction that implies it (a type that excludes the kinds a keyword
// applies to, an enum whose members all pass it, a required list longer
// than minProperties). References ($ref, $dynamicRef, $recursiveRef) are
// followed on both sides: to the root ("#"), through JSON pointers
// (percent-decoded, then ~1 and ~0 unescaped) into $defs, definitions or
// anywhere in the document, and to anchors ($anchor, $dynamicAnchor, a
// draft-07 "$id": "#name"); absolute references are followed when they
// name the document's own root $id. Recursive schemas are compared
// without looping: a comparison met again after descending into the
// instance holds if the rest of the proof holds.
//
// Treated conservatively: a reference that does not resolve within its
// document (a remote one, a pointer to nothing, an ambiguous anchor, any
// reference inside an embedded resource with its own $id) is kept only by
// the identical reference, from the same base, in the compressed schema;
// in the compressed schema it adds nothing. A reference cycle that never
// reaches into the instance (such as {"$ref": "#"}) is a loss, unless the
// compressed schema keeps it as it is. A pattern is compared as text,
// except that the members of an enum may be checked against it when the
// pattern keeps to syntax ECMA-262 and Go's regexp read alike.
// unevaluatedProperties and unevaluatedItems depend on which branches of
// anyOf, oneOf, if and dependentSchemas matched; a compression that
// changes such branches beside them may be reported lossy when it is not.
// A comparison past 256 nested schemas or 50,000 steps stops and reports
// a "limit" loss; losses multiplied through shared references are listed
// up to 64 per place, then one "limit" loss says more were not.
//
// Dialects: a root $schema naming draft-06 or draft-07 makes $ref hide its
// siblings, draft-04 (and older) also allows boolean exclusiveMinimum and
// exclusiveMaximum; otherwise 2020-12 rules apply, with items as an array
// and additionalItems read as in 2019-09 and earlier, and dependencies read
// as dependentRequired or dependentSchemas by the shape of each value.
// OpenAPI's nullable: true adds null to the type beside it, in both
// schemas.
package schemadiff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Loss is one constraint of the original schema that the compressed
// schema does not keep.
type Loss struct {
	// Path is a JSON pointer to the schema in the original that holds the
	// constraint, reached as a validator reaches it: through references, a
	// "$ref" token stands for the step into the target (like JSON Schema's
	// keywordLocation). "" is the root.
	Path string
	// Kind is the keyword whose constraint is lost or weakened ("required",
	// "maxLength", "additionalProperties", "$ref", an unknown keyword,
	// JSON-quoted if it is empty or holds spaces or control characters),
	// or "false" for a false schema, "schema" for a schema that is neither
	// an object nor a boolean, "limit" for a comparison cut short.
	Kind string
	// What names the part lost: a property name for "required" and
	// "properties", an enum member (or "admits X" for a value the
	// compressed schema admits), an index, a pattern, or the original value
	// of the keyword as JSON. It may be empty.
	What string
}

// String renders the loss as "path kind what" ("path kind" when What is
// empty), the root path as "/".
func (l Loss) String() string {
	p := l.Path
	if p == "" {
		p = "/"
	}
	if l.What == "" {
		return p + " " + l.Kind
	}
	return fmt.Sprintf("%s %s %s", p, l.Kind, l.What)
}

// Compare decodes both schemas and returns the constraints of orig that
// compressed does not keep, sorted by path, kind and what, without
// duplicates; nil when the compression is lossless. Invalid JSON in either
// is an error. Compare is safe for concurrent use and never panics; its
// work is bounded whatever the input.
func Compare(orig, compressed []byte) ([]Loss, error) {
	a, err := decode(orig)
	if err != nil {
		return nil, fmt.Errorf("original schema: %w", err)
	}
	b, err := decode(compressed)
	if err != nil {
		return nil, fmt.Errorf("compressed schema: %w", err)
	}
	w := newWalker()
	o, c := newDoc(a, &w.ids).rootNode(), newDoc(b, &w.ids).rootNode()
	out := w.diff("", o, []*node{c})
	if len(out) == 0 && w.factsOf(flatten([]*node{c})).kinds == 0 && w.factsOf(flatten([]*node{o})).kinds != 0 {
		out = []Loss{{Kind: "false", What: "compressed schema accepts nothing"}}
	}
	if w.exhausted && !slices.ContainsFunc(out, func(l Loss) bool { return l.Kind == "limit" }) {
		out = append(out, w.limitLoss("")...)
	}
	slices.SortFunc(out, func(x, y Loss) int {
		if c := strings.Compare(x.Path, y.Path); c != 0 {
			return c
		}
		if c := strings.Compare(x.Kind, y.Kind); c != 0 {
			return c
		}
		return strings.Compare(x.What, y.What)
	})
	return slices.Compact(out), nil
}

// errTrailing reports data after the schema's JSON value.
var errTrailing = errors.New("data after the schema")

// decode reads one JSON value, numbers kept exact.
func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errTrailing
	}
	return v, nil
}
