package wire

import (
	"bytes"
	"encoding/json"
	"slices"
)

// jsonKit holds the small JSON helpers of the renderer and the session.
// They are methods of one value so that they share a single name in the
// package.
type jsonKit struct{}

var jk jsonKit

// marshal encodes v, whose values are all encodable.
func (jsonKit) marshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("wire: render: " + err.Error())
	}
	return b
}

// object returns args when it is a JSON object, and {} otherwise: tool
// inputs are objects in every dialect that does not wrap them in a string.
func (jsonKit) object(args json.RawMessage) json.RawMessage {
	if _, ok := asObject(args); ok {
		return bytes.TrimSpace(args)
	}
	return json.RawMessage(`{}`)
}

// argString returns the arguments as the JSON string Chat and Responses
// carry them in: the compact JSON, or "{}" when there are none.
func (jsonKit) argString(args json.RawMessage) json.RawMessage {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		return mustString("{}")
	}
	var buf bytes.Buffer
	if json.Compact(&buf, args) == nil {
		return mustString(buf.String())
	}
	return mustString(string(args))
}

// topFields is a JSON object whose keys keep their order, so that a body
// written back keeps the layout it was read with.
type topFields struct {
	keys []string
	vals map[string]json.RawMessage
}

// readTopFields parses a JSON object, keeping the order of its keys. A key
// given twice is an error, as [Read] makes it.
func readTopFields(b []byte) (topFields, error) {
	f := topFields{vals: map[string]json.RawMessage{}}
	err := walkObject(b, plainWords, func(key string, raw json.RawMessage, _, _ int) error {
		if _, dup := f.vals[key]; dup {
			return errDuplicateKey{key}
		}
		f.keys = append(f.keys, key)
		f.vals[key] = raw
		return nil
	})
	return f, err
}

// get returns the value of key.
func (f *topFields) get(key string) (json.RawMessage, bool) {
	v, ok := f.vals[key]
	return v, ok
}

// set gives key a value, appending the key when it is new.
func (f *topFields) set(key string, v json.RawMessage) {
	if f.vals == nil {
		f.vals = map[string]json.RawMessage{}
	}
	if _, ok := f.vals[key]; !ok {
		f.keys = append(f.keys, key)
	}
	f.vals[key] = v
}

// del removes key.
func (f *topFields) del(key string) {
	if _, ok := f.vals[key]; !ok {
		return
	}
	delete(f.vals, key)
	f.keys = slices.DeleteFunc(f.keys, func(k string) bool { return k == key })
}

// clone returns a copy whose keys and values may change without touching f.
func (f *topFields) clone() topFields {
	c := topFields{keys: slices.Clone(f.keys), vals: make(map[string]json.RawMessage, len(f.vals))}
	for k, v := range f.vals {
		c.vals[k] = v
	}
	return c
}

// bytes writes the object, keys in order.
func (f *topFields) bytes() []byte {
	n := 2
	for _, k := range f.keys {
		n += len(k) + len(f.vals[k]) + 4
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, k := range f.keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, mustString(k)...)
		b = append(b, ':')
		b = append(b, f.vals[k]...)
	}
	return append(b, '}')
}
