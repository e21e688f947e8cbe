package pruneguard

import (
	"encoding/json"
	"path"
	"strings"

	"github.com/pruneguard/pruneguard/internal/jsoncanon"
)

// The resources a call touches (see Tool.ScopeArgs): the paths its
// arguments name, and the marks of the latest mutating calls that named
// each, so that a read is stale only after a write of what it read.

// anyScope files the paths of every scope together, for the reads of the
// empty scope, which overlaps them all.
const anyScope = -1

// pathKey names a path within a scope (its index plus one, 0 for the
// empty scope, anyScope for all of them).
type pathKey struct {
	scope int32
	path  string
}

// pathMarks are the marks of the latest mutating calls that named a path
// (at) and that named it or a path inside it (under).
type pathMarks struct{ at, under int64 }

// resources returns the cleaned paths call k of tool r names by its
// tool's ScopeArgs, or false when the call touches all of its scope: the
// tool names no argument, or the call's arguments are not a JSON object
// holding each named argument once, as a string.
func (c *Context) resources(r *toolRec, k int32) ([]string, bool) {
	if len(r.t.ScopeArgs) == 0 {
		return nil, false
	}
	vals, ok := argStrings(c.args(k), r.t.ScopeArgs)
	if !ok {
		return nil, false
	}
	for i, v := range vals {
		vals[i] = cleanPath(v)
	}
	return vals, true
}

// argStrings returns the strings the top-level members names of the JSON
// object args hold, in the order of names, or false when args is not a
// JSON object, or one of names is missing, given twice or not a string.
func argStrings(args []byte, names []string) ([]string, bool) {
	i := jsoncanon.SkipSpace(args, 0)
	if i >= len(args) || args[i] != '{' {
		return nil, false
	}
	vals := make([]string, len(names))
	seen := make([]bool, len(names))
	i = jsoncanon.SkipSpace(args, i+1)
	for i < len(args) && args[i] != '}' {
		end := jsoncanon.String(args, i)
		if end < 0 {
			return nil, false
		}
		key, ok := unquote(args[i:end])
		if !ok {
			return nil, false
		}
		if i = jsoncanon.SkipSpace(args, end); i >= len(args) || args[i] != ':' {
			return nil, false
		}
		start := jsoncanon.SkipSpace(args, i+1)
		if end, ok = jsoncanon.Value(args, start, jsoncanon.MaxDepth); !ok {
			return nil, false
		}
		for j, name := range names {
			if name != key {
				continue
			}
			v, isString := "", args[start] == '"'
			if isString {
				v, isString = unquote(args[start:end])
			}
			if !isString || seen[j] {
				return nil, false
			}
			vals[j], seen[j] = v, true
		}
		switch i = jsoncanon.SkipSpace(args, end); {
		case i < len(args) && args[i] == ',':
			if i = jsoncanon.SkipSpace(args, i+1); i >= len(args) || args[i] != '"' {
				return nil, false
			}
		case i >= len(args) || args[i] != '}':
			return nil, false
		}
	}
	for _, ok := range seen {
		if !ok {
			return nil, false
		}
	}
	return vals, i < len(args) && jsoncanon.SkipSpace(args, i+1) == len(args)
}

// unquote decodes the JSON string b, quotes included.
func unquote(b []byte) (string, bool) {
	if !strings.ContainsRune(string(b), '\\') {
		return string(b[1 : len(b)-1]), true
	}
	var s string
	return s, json.Unmarshal(b, &s) == nil
}

// cleanPath returns p as paths are compared: cleaned of "." and ".."
// steps and doubled slashes, "." for an empty or current path.
func cleanPath(p string) string { return path.Clean(p) }

// parents calls f with each path that holds p, p first, then each
// directory above it up to the root ("/" for an absolute path, "." for a
// relative one).
func parents(p string, f func(string)) {
	f(p)
	for p != "/" && p != "." {
		i := strings.LastIndexByte(p, '/')
		switch {
		case i < 0:
			p = "."
		case i == 0:
			p = "/"
		default:
			p = p[:i]
		}
		f(p)
	}
}

// wrote records that a mutating call at mark m named path p of scope s.
func (c *Context) wrote(s int32, p string, m int64) {
	if c.paths == nil {
		c.paths = make(map[pathKey]pathMarks)
	}
	k := pathKey{s, p}
	pm := c.paths[k]
	pm.at = max(pm.at, m)
	c.paths[k] = pm
	parents(p, func(q string) {
		k := pathKey{s, q}
		pm := c.paths[k]
		pm.under = max(pm.under, m)
		c.paths[k] = pm
	})
}

// touched returns the mark of the latest mutating call of scope s that
// named a path overlapping p: p itself or a path inside it (under p), or
// a directory holding p (at it). An absolute and a relative path are
// taken to overlap: a write of any absolute path touches every relative
// one, and the other way round.
func (c *Context) touched(s int32, p string) int64 {
	if len(c.paths) == 0 {
		return 0
	}
	latest := c.paths[pathKey{s, p}].under
	parents(p, func(q string) {
		if q != p {
			latest = max(latest, c.paths[pathKey{s, q}].at)
		}
	})
	other := "/"
	if strings.HasPrefix(p, "/") {
		other = "."
	}
	return max(latest, c.paths[pathKey{s, other}].under)
}

// remapPaths moves the marks of the paths with at, as remapScopes moves
// the others, and forgets those that come before every call kept: they
// can make no read stale.
func (c *Context) remapPaths(at func(int64) int64) {
	for k, pm := range c.paths {
		pm.at, pm.under = at(pm.at), at(pm.under)
		if pm.under <= 1 {
			delete(c.paths, k)
			continue
		}
		c.paths[k] = pm
	}
}
