package schemadiff

import (
	"crypto/sha256"
	"slices"
)

// Two schemas that differ in annotations only validate alike. A
// comparison therefore starts by asking whether a member of the
// compressed conjunction is such a copy of the original schema: then every
// constraint is kept, however the schema is built. Schemas are compared by
// a digest of their constraint keywords (annotations left out, object
// members in order), and the references in them by the same test on their
// targets.

// digest is a node's digest and the nodes in it that hold references.
type digest struct {
	sum  [32]byte
	refs []*node
}

// digest computes (once) n's digest.
func (n *node) digest() *digest {
	if n.dig != nil {
		return n.dig
	}
	d := &digest{}
	h := sha256.New()
	switch {
	case n.obj != nil:
		keys := make([]string, 0, len(n.obj))
		for k := range n.obj {
			if !annotations[k] {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		sub := func(s *node) {
			sd := s.digest()
			h.Write(sd.sum[:])
			d.refs = append(d.refs, sd.refs...)
		}
		for _, k := range keys {
			h.Write([]byte(canon(k)))
			v := n.obj[k]
			switch subschemaShape[k] {
			case shapeOne:
				if l, ok := v.([]any); ok && k == "items" {
					h.Write([]byte("["))
					for i, s := range l {
						sub(n.child(s, k, itoa(i)))
					}
					continue
				}
				sub(n.child(v, k))
				continue
			case shapeList:
				if l, ok := v.([]any); ok {
					h.Write([]byte("["))
					for i, s := range l {
						sub(n.child(s, k, itoa(i)))
					}
					continue
				}
			case shapeMap:
				if m, ok := v.(map[string]any); ok {
					names := make([]string, 0, len(m))
					for name := range m {
						names = append(names, name)
					}
					slices.Sort(names)
					h.Write([]byte("{"))
					for _, name := range names {
						h.Write([]byte(canon(name)))
						if _, isList := m[name].([]any); isList && k == "dependencies" {
							h.Write([]byte(canon(m[name])))
							continue
						}
						sub(n.child(m[name], k, name))
					}
					continue
				}
			}
			h.Write([]byte(canon(v)))
			if slices.Contains(refKeywords, k) {
				d.refs = append(d.refs, n)
			}
		}
	default:
		h.Write([]byte("value:" + canon(n.val)))
	}
	h.Sum(d.sum[:0])
	n.dig = d
	return d
}

// equivalent says whether o and c differ in annotations only, references
// followed: then c accepts exactly what o accepts.
func (w *walker) equivalent(o, c *node) bool {
	if o.orig != nil || c.orig != nil || o.alts != nil || c.alts != nil || o.neg != nil || c.neg != nil {
		return false
	}
	if o.doc.dialect != c.doc.dialect || !sameBase(o.doc, c.doc) || o.resource != c.resource {
		return false
	}
	do, dc := o.digest(), c.digest()
	if do.sum != dc.sum || len(do.refs) != len(dc.refs) {
		return false
	}
	key := o.key() + "=" + c.key()
	if v, ok := w.same[key]; ok {
		return v // true while in progress: reference cycles are followed once
	}
	w.same[key] = true
	mark := len(w.sameLog)
	w.sameLog = append(w.sameLog, key)
	for i, ro := range do.refs {
		rc := dc.refs[i]
		for _, k := range refKeywords {
			to, tc := ro.resolve(k), rc.resolve(k)
			if (to == nil) != (tc == nil) || (to != nil && !w.equivalent(to, tc)) {
				// What was found equal since may have relied on this pair.
				for _, k := range w.sameLog[mark:] {
					delete(w.same, k)
				}
				w.sameLog = w.sameLog[:mark]
				w.same[key] = false
				return false
			}
		}
	}
	return true
}
