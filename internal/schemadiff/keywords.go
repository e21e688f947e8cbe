package schemadiff

// annotations are the keywords that constrain nothing: the JSON Schema
// 2020-12 meta-data vocabulary less readOnly, and $comment. A validator
// never rejects an instance because of them, so a compression may drop or
// change them freely.
//
// readOnly is kept as a constraint: 2020-12 lets the owning authority
// reject an instance that carries a read-only value, so a model that no
// longer sees it may send arguments the tool refuses. writeOnly says only
// that a value is not returned, which is no concern of arguments.
var annotations = map[string]bool{
	"title":       true,
	"description": true,
	"default":     true,
	"examples":    true,
	"deprecated":  true,
	"writeOnly":   true,
	"$comment":    true,
}

// structural are the keywords that hold or name schemas without
// constraining an instance themselves: dialect, identifiers and anchors,
// and the containers of definitions (which matter only through the
// references that reach them). nullable is read beside type (see the
// package documentation), never alone.
var structural = map[string]bool{
	"$schema":          true,
	"$id":              true,
	"$anchor":          true,
	"$dynamicAnchor":   true,
	"$recursiveAnchor": true,
	"$vocabulary":      true,
	"$defs":            true,
	"definitions":      true,
	"nullable":         true,
}

// IsAnnotation reports whether a keyword is a pure annotation, one that a
// compression may drop or change without losing anything: title,
// description, default, examples, deprecated, writeOnly and $comment.
// Every other keyword is a constraint, unknown ones included, except the
// structural keywords that only hold or name schemas ($schema, $id,
// $anchor, $dynamicAnchor, $recursiveAnchor, $vocabulary, $defs,
// definitions) and OpenAPI's nullable, which is read with type.
func IsAnnotation(keyword string) bool { return annotations[keyword] }

// Keywords checked by a rule of their own, in the order losses are
// looked for. Keywords read with another (then and else with if,
// minContains and maxContains with contains, additionalItems and items
// with prefixItems, exclusive bounds with the bound) are checked there.
var ordered = []string{
	"type", "enum", "const",
	"multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
	"maxLength", "minLength", "pattern", "format",
	"contentEncoding", "contentMediaType", "contentSchema",
	"items", "unevaluatedItems", "maxItems", "minItems", "uniqueItems", "contains",
	"maxProperties", "minProperties", "required", "dependentRequired", "dependencies",
	"properties", "patternProperties", "additionalProperties", "unevaluatedProperties",
	"propertyNames", "dependentSchemas",
	"allOf", "anyOf", "oneOf", "not", "if",
	"$ref", "$dynamicRef", "$recursiveRef",
	"readOnly",
}

// companions are keywords checked together with another one.
var companions = map[string]string{
	"prefixItems":     "items",
	"additionalItems": "items",
	"minContains":     "contains",
	"maxContains":     "contains",
	"then":            "if",
	"else":            "if",
}

// Instance kinds, as bits: what a conjunction of schemas may still accept.
const (
	kNull uint8 = 1 << iota
	kBool
	kObject
	kArray
	kString
	kInt    // a number with no fractional part
	kFrac   // a number with one
	kNumber = kInt | kFrac
	kAll    = kNull | kBool | kObject | kArray | kString | kNumber
)

// domain says which kinds of instance a keyword applies to; other kinds
// pass it whatever its value.
var domain = map[string]uint8{
	"multipleOf": kNumber, "maximum": kNumber, "exclusiveMaximum": kNumber,
	"minimum": kNumber, "exclusiveMinimum": kNumber,
	"maxLength": kString, "minLength": kString, "pattern": kString,
	"contentEncoding": kString, "contentMediaType": kString, "contentSchema": kString,
	"items": kArray, "prefixItems": kArray, "additionalItems": kArray,
	"unevaluatedItems": kArray, "maxItems": kArray, "minItems": kArray,
	"uniqueItems": kArray, "contains": kArray, "minContains": kArray, "maxContains": kArray,
	"maxProperties": kObject, "minProperties": kObject, "required": kObject,
	"dependentRequired": kObject, "dependencies": kObject, "properties": kObject,
	"patternProperties": kObject, "additionalProperties": kObject,
	"unevaluatedProperties": kObject, "propertyNames": kObject, "dependentSchemas": kObject,
}

// typeNames maps the names of types to kinds.
var typeNames = map[string]uint8{
	"null": kNull, "boolean": kBool, "object": kObject, "array": kArray,
	"string": kString, "integer": kInt, "number": kNumber,
}

// kindOf is the kind of a decoded JSON value.
func kindOf(v any) uint8 {
	switch x := v.(type) {
	case nil:
		return kNull
	case bool:
		return kBool
	case map[string]any:
		return kObject
	case []any:
		return kArray
	case string:
		return kString
	default:
		if d, ok := number(x); ok && d.integer() {
			return kInt
		}
		return kFrac
	}
}
