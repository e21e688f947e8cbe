package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pruneguard/pruneguard/wire"
)

// session is one conversation as a request body.
type session struct {
	name    string
	dialect wire.Dialect
	body    []byte
	msgs    []wire.Message
	system  string // what every mode keeps: the top-level fields but the history (system prompt, tools, settings) and system messages
}

// newSession reads body as a session.
func newSession(name string, body []byte, d wire.Dialect) (*session, error) {
	b, err := wire.Read(body, d)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s := &session{name: name, dialect: b.Dialect, body: body, msgs: b.Messages}
	var sys []string
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k != "messages" && k != "input" && k != "contents" {
			sys = append(sys, contentTexts(top[k])...)
		}
	}
	for _, m := range s.msgs {
		if isSystem(m) {
			sys = append(sys, contentTexts(m.Raw)...)
		}
	}
	s.system = strings.Join(sys, sep)
	return s, nil
}

// loadTranscripts reads every recorded transcript under dir (each file
// but SOURCES.md), in name order.
func loadTranscripts(dir string) ([]*session, error) {
	var names []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != "SOURCES.md" {
			names = append(names, path)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*session
	for _, path := range names {
		file, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		body, d, err := wire.Unwrap(file, filepath.Base(path))
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(dir, path)
		s, err := newSession(rel, body, d)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// isSystem reports whether m is a system or developer message.
func isSystem(m wire.Message) bool { return m.Role == "system" || m.Role == "developer" }

// isAssistant reports whether m is the model's: an assistant or model
// message, or a Responses item of the model's (a call or reasoning).
func isAssistant(m wire.Message) bool {
	switch {
	case m.Role == "assistant" || m.Role == "model":
		return true
	case m.Role == "":
		return m.Type == "reasoning" || len(m.Calls) > 0 || strings.HasSuffix(m.Type, "_call")
	}
	return false
}

// structural are the keys whose values are the envelope of a message,
// not what it says: ids, roles, types, names, signatures.
var structural = map[string]bool{
	"id": true, "type": true, "role": true, "name": true, "tool_call_id": true, "tool_call_ids": true,
	"tool_use_id": true, "call_id": true, "toolUseId": true, "signature": true, "encrypted_content": true,
	"thoughtSignature": true, "status": true, "index": true, "cache_control": true, "cachePoint": true,
	"message_type": true, "agent": true,
}

// argKeys hold a call's arguments as a JSON object, which is read whole.
var argKeys = map[string]bool{"input": true, "args": true, "arguments": true}

// contentTexts returns what a message (or a system field) says, as
// extraction reads it: each string outside the envelope's keys, and each
// call's arguments object whole.
func contentTexts(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return appendTexts(nil, "", v)
}

func appendTexts(dst []string, key string, v any) []string {
	switch v := v.(type) {
	case string:
		if !structural[key] && strings.TrimSpace(v) != "" {
			dst = append(dst, v)
		}
	case map[string]any:
		if argKeys[key] {
			b, _ := json.Marshal(v)
			return append(dst, string(b))
		}
		for _, k := range sortedKeys(v) {
			dst = appendTexts(dst, k, v[k])
		}
	case []any:
		for _, x := range v {
			dst = appendTexts(dst, key, x)
		}
	}
	return dst
}

// visibleText returns everything a model reading raw (a body, or a
// recall answer) sees, for checking what it carries: the JSON as it is,
// then every string in it decoded, and the strings of JSON strings
// decoded again.
func visibleText(raw []byte) string {
	var b strings.Builder
	b.Write(raw)
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) == nil {
		writeStrings(&b, v, 0)
	}
	return b.String()
}

func writeStrings(b *strings.Builder, v any, depth int) {
	switch v := v.(type) {
	case string:
		b.WriteString(sep)
		b.WriteString(v)
		t := strings.TrimSpace(v)
		if depth < 3 && len(t) > 1 && (t[0] == '{' || t[0] == '[') {
			var w any
			dec := json.NewDecoder(strings.NewReader(t))
			dec.UseNumber()
			if dec.Decode(&w) == nil {
				writeStrings(b, w, depth+1)
			}
		}
	case map[string]any:
		for _, k := range sortedKeys(v) {
			writeStrings(b, v[k], depth)
		}
	case []any:
		for _, x := range v {
			writeStrings(b, x, depth)
		}
	}
}

// sep parts the strings of a text made of many: no fact holds it, so no
// fact is found across two strings.
const sep = "\x00"

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
