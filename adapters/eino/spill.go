package einoguard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/spill"
)

// Spilling: what the guard stores of a message, how its pointers are
// worded, and the recall tool the model reads them back with.

// pointerWords is a Spiller that words its own pointers and says how
// long their text may be: *spill.Spiller is one.
type pointerWords interface {
	PointerText(pruneguard.Pointer) string
	LongestPointerText() string
}

// samplePointer stands for the pointers of a Spiller that does not say
// how long they are: spill's default name and a segment key.
var samplePointer = pruneguard.Pointer{Store: spill.DefaultName, Key: "seg-7c9e6679-7425-40de-944b-e07fc1f90ae7"}

// pointerTextOf returns how the pointers of sp are worded: by sp, or by
// spill.PointerText.
func pointerTextOf(sp pruneguard.Spiller) func(pruneguard.Pointer) string {
	if w, ok := sp.(pointerWords); ok {
		return w.PointerText
	}
	return spill.PointerText
}

// longestPointerText is a pointer text of sp at its longest, or a sample
// one's when sp does not say.
func longestPointerText(sp pruneguard.Spiller) string {
	if w, ok := sp.(pointerWords); ok {
		return w.LongestPointerText()
	}
	return spill.PointerText(samplePointer)
}

// configureSpill readies the session for Guard.Spill: the Context's
// Resolver defaults to it, pointers are worded by it, and the recall
// tool is registered with its annotations unless Tools declares it, in
// which case it must be read-only and closed-world.
func (s *Session) configureSpill() error {
	s.pointerText = pointerTextOf(s.cfg.Guard.Spill)
	if s.cfg.Guard.Spill == nil {
		return nil
	}
	s.recall = true
	if s.cfg.Context.Resolver == nil {
		s.cfg.Context.Resolver = s.cfg.Guard.Spill
	}
	i := slices.IndexFunc(s.cfg.Tools, func(t pruneguard.Tool) bool { return t.Name == spill.RecallToolName })
	if i < 0 {
		s.cfg.Tools = append(s.cfg.Tools, RecallSpec())
		return nil
	}
	if t := s.cfg.Tools[i]; !t.Annotations.ReadOnly() || t.OutputClass() != pruneguard.Reconstructible {
		return fmt.Errorf("%w: tool %q is the spill's recall tool: declare it read-only and closed-world (RecallSpec)", ErrToolInfo, t.Name)
	}
	return nil
}

// recallClass gives the results of recall calls, and a message of recall
// calls only, the class they have: reconstructible, whatever was called
// since (a recall answers from segments no tool changes).
func (s *Session) recallClass(e *pruneguard.Message) {
	if !s.recall {
		return
	}
	for _, a := range e.Answers {
		if s.recent[a] {
			delete(s.recent, a)
			e.Class = pruneguard.Reconstructible
		}
	}
	if len(e.Calls) == 0 {
		return
	}
	only := len(e.Content) == 0
	for _, c := range e.Calls {
		if c.Tool != spill.RecallToolName {
			only = false
			continue
		}
		if s.recent == nil {
			s.recent = make(map[pruneguard.CallID]bool)
		}
		s.recent[c.ID] = true
	}
	if only {
		e.Class = pruneguard.Reconstructible
	}
}

// spillAs is the guard's Spill store as the session gives it: each
// message is stored with the eino message as its content, in JSON, so
// that a recall gives back what the model read (content, reasoning,
// parts, calls, the call answered).
type spillAs struct {
	s *Session
	pruneguard.Spiller
}

// SpillMessages implements pruneguard.Spiller.
func (sp spillAs) SpillMessages(ctx context.Context, ms []pruneguard.Message) (pruneguard.Pointer, error) {
	ms = slices.Clone(ms)
	for i := range ms {
		k, ok := sp.s.find(ms[i].ID)
		if !ok || sp.s.live[k].sum {
			continue
		}
		if b, err := json.Marshal(sp.s.orig(k)); err == nil {
			ms[i].Content = b
		}
	}
	return sp.Spiller.SpillMessages(ctx, ms)
}
