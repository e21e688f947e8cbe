package pruneguard

import (
	"cmp"
	"errors"
	"slices"
	"strings"
)

// The marks of the latest mutating calls, saved when a mutating call
// named the resources it touched (Tool.ScopeArgs): the replay cannot
// tell them from the tools' latest calls alone, since a call no longer
// held may have named other paths than the one held after it.

// savedMutations are the marks of the latest mutating calls: Whole*
// those that touched all of their scope, Named* those that named their
// resources; *Any of any scope, *All of tools with no scope; Scopes per
// named scope; Paths per path a call named or holds a path one named.
type savedMutations struct {
	WholeAny *savedMark        `json:"wholeAny,omitempty"`
	WholeAll *savedMark        `json:"wholeAll,omitempty"`
	NamedAny *savedMark        `json:"namedAny,omitempty"`
	NamedAll *savedMark        `json:"namedAll,omitempty"`
	Scopes   []savedScopeMarks `json:"scopes,omitempty"`
	Paths    []savedPathMarks  `json:"paths,omitempty"`
}

// savedScopeMarks are the marks of a named scope.
type savedScopeMarks struct {
	Name  str        `json:"name"`
	Whole *savedMark `json:"whole,omitempty"`
	Named *savedMark `json:"named,omitempty"`
}

// savedPathMarks are the marks of a path: of the latest call naming it
// (at) and naming it or a path inside it (under), among the calls of
// tools of its scope ("" for tools with none), or of every scope.
type savedPathMarks struct {
	Scope    str        `json:"scope,omitempty"`
	AnyScope bool       `json:"anyScope,omitempty"`
	Path     str        `json:"path"`
	At       *savedMark `json:"at,omitempty"`
	Under    *savedMark `json:"under"`
}

// savedMark places a mark: at a call held, or after the call named and
// before the next held, or, with neither, before every call held.
type savedMark struct {
	Call  *savedCallRef `json:"call,omitempty"`
	After *savedCallRef `json:"after,omitempty"`
}

// savedMutations returns the marks of the latest mutating calls, or nil
// when no mutating call named its resources.
func (c *Context) savedMutations() *savedMutations {
	if c.resAny == 0 {
		return nil
	}
	s := &savedMutations{
		WholeAny: c.savedMark(c.mutAny), WholeAll: c.savedMark(c.mutAll),
		NamedAny: c.savedMark(c.resAny), NamedAll: c.savedMark(c.resAll),
	}
	for _, sc := range c.scopes {
		if sc.mut != 0 || sc.res != 0 {
			s.Scopes = append(s.Scopes, savedScopeMarks{Name: str(sc.name), Whole: c.savedMark(sc.mut), Named: c.savedMark(sc.res)})
		}
	}
	for k, pm := range c.paths {
		sp := savedPathMarks{Path: str(k.path), At: c.savedMark(pm.at), Under: c.savedMark(pm.under)}
		switch {
		case k.scope == anyScope:
			sp.AnyScope = true
		case k.scope > 0:
			sp.Scope = str(c.scopes[k.scope-1].name)
		}
		s.Paths = append(s.Paths, sp)
	}
	slices.SortFunc(s.Scopes, func(a, b savedScopeMarks) int { return strings.Compare(string(a.Name), string(b.Name)) })
	slices.SortFunc(s.Paths, func(a, b savedPathMarks) int {
		return cmp.Or(cmp.Compare(string(a.Scope), string(b.Scope)), compareBool(a.AnyScope, b.AnyScope),
			cmp.Compare(string(a.Path), string(b.Path)))
	})
	return s
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// savedMark places mark m, or is nil for none.
func (c *Context) savedMark(m int64) *savedMark {
	if m == 0 {
		return nil
	}
	if m%2 == 0 {
		if ref := c.callRef(int32(m/2 - 1)); ref != nil {
			return &savedMark{Call: ref}
		}
	}
	return &savedMark{After: c.heldBefore(m)}
}

// mutations takes the marks of the latest mutating calls, when the state
// has them, in place of those the tools' latest calls give.
func (b *restorer) mutations() error {
	s, c := b.s.Mutations, b.c
	if s == nil {
		return nil
	}
	var err error
	mark := func(sm *savedMark, what string) int64 {
		m, e := b.mark(sm)
		if e != nil && err == nil {
			err = badStateBecause("mutations", what, e)
		}
		return m
	}
	c.mutAny, c.mutAll = mark(s.WholeAny, "wholeAny"), mark(s.WholeAll, "wholeAll")
	c.resAny, c.resAll = mark(s.NamedAny, "namedAny"), mark(s.NamedAll, "namedAll")
	for _, sc := range s.Scopes {
		i := c.scopeIdx[string(sc.Name)]
		if i == 0 {
			return badStateBecause("mutations", string(sc.Name), "a scope no tool has")
		}
		c.scopes[i-1].mut, c.scopes[i-1].res = mark(sc.Whole, string(sc.Name)), mark(sc.Named, string(sc.Name))
	}
	c.paths = make(map[pathKey]pathMarks, len(s.Paths))
	for _, sp := range s.Paths {
		k, ok := b.pathKey(sp)
		if _, dup := c.paths[k]; !ok || dup || sp.Under == nil {
			return badStateBecause("mutations", string(sp.Path), "a path twice, in no scope, unclean or with no mark")
		}
		c.paths[k] = pathMarks{at: mark(sp.At, string(sp.Path)), under: mark(sp.Under, string(sp.Path))}
	}
	return err
}

// pathKey is the key of a saved path's marks.
func (b *restorer) pathKey(sp savedPathMarks) (pathKey, bool) {
	k := pathKey{path: string(sp.Path)}
	switch {
	case sp.AnyScope:
		k.scope = anyScope
		if sp.Scope != "" {
			return k, false
		}
	case sp.Scope != "":
		if k.scope = b.c.scopeIdx[string(sp.Scope)]; k.scope == 0 {
			return k, false
		}
	}
	return k, k.path != "" && cleanPath(k.path) == k.path
}

// mark is the mark sm places, 0 for none.
func (b *restorer) mark(sm *savedMark) (int64, error) {
	switch {
	case sm == nil:
		return 0, nil
	case sm.Call != nil && sm.After != nil:
		return 0, errors.New("a mark at a call and after one")
	case sm.Call != nil:
		k, ok := b.findCall(sm.Call)
		if !ok {
			return 0, errors.New("a mark at no call")
		}
		return callMark(k), nil
	case sm.After != nil:
		k, ok := b.findCall(sm.After)
		if !ok {
			return 0, errors.New("a mark after no call")
		}
		return 2*int64(k+1) + 1, nil
	}
	return 1, nil
}
