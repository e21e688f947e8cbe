package pruneguard

import (
	"errors"
	"strconv"
	"strings"
)

// ErrConfig is matched (with errors.Is) by every [*ConfigError]: a
// [Guard] or [Config] that makes no sense, refused before it changes
// anything.
var ErrConfig = errors.New("pruneguard: invalid configuration")

// ConfigError names a field of a [Guard] or [Config] that was refused,
// and why. It matches [ErrConfig]. Several refused fields come joined
// with [errors.Join]; errors.As finds the first.
//
// The zero ConfigError names no field; the package returns it filled in.
type ConfigError struct {
	Field  string // e.g. "Guard.Budget", "Config.Boundary"
	Value  string // the value refused, as text
	Reason string // why it was refused
}

// Error returns the error's text: lower case, prefixed with the package name.
func (e *ConfigError) Error() string {
	s := "pruneguard: invalid configuration: " + e.Field
	if e.Value != "" {
		s += " " + e.Value
	}
	return s + ": " + e.Reason
}

// Unwrap returns [ErrConfig].
func (e *ConfigError) Unwrap() error { return ErrConfig }

// configErrs gathers the refused fields of one validation.
type configErrs []error

func (es *configErrs) add(field string, value int, reason string) {
	*es = append(*es, &ConfigError{Field: field, Value: strconv.Itoa(value), Reason: reason})
}

func (es *configErrs) addText(field, value, reason string) {
	*es = append(*es, &ConfigError{Field: field, Value: value, Reason: reason})
}

func (es configErrs) err() error {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return es[0]
	}
	return errors.Join(es...)
}

// Validate reports whether the guard's own fields make sense, with a
// [*ConfigError] for each that does not (joined when several): a Budget
// that is not positive (a guard with no budget would prune everything it
// may, the user's task included), a negative Ceiling, Trigger, MinClear,
// Rounds or HoardKeep, a positive Ceiling below the Budget, a Trigger
// below the Budget or above a positive Ceiling, and a Split or Hoard out
// of range. [Guard.Check] validates first and changes nothing when this
// fails; [Guard.ValidateFor] adds what depends on the Context.
func (g Guard) Validate() error {
	var es configErrs
	g.validate(&es)
	return es.err()
}

func (g *Guard) validate(es *configErrs) {
	if g.Budget <= 0 {
		es.add("Guard.Budget", g.Budget, "must be positive: a guard with no budget would prune everything it may, the user's task included")
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"Guard.Ceiling", g.Ceiling}, {"Guard.Trigger", g.Trigger}, {"Guard.MinClear", g.MinClear}, {"Guard.Rounds", g.Rounds}, {"Guard.HoardKeep", g.HoardKeep}} {
		if f.v < 0 {
			es.add(f.name, f.v, "must not be negative")
		}
	}
	if g.Ceiling > 0 && g.Ceiling < g.Budget {
		es.add("Guard.Ceiling", g.Ceiling, "is below Guard.Budget "+strconv.Itoa(g.Budget))
	}
	if g.Trigger > 0 && g.Trigger < g.Budget {
		es.add("Guard.Trigger", g.Trigger, "is below Guard.Budget "+strconv.Itoa(g.Budget)+": a prune would start before the budget is reached")
	}
	if g.Trigger > 0 && g.Ceiling > 0 && g.Trigger > g.Ceiling {
		es.add("Guard.Trigger", g.Trigger, "is above Guard.Ceiling "+strconv.Itoa(g.Ceiling))
	}
	if g.Split > SplitStrict {
		es.add("Guard.Split", int(g.Split), "is not a SplitMode")
	}
	if g.Hoard > HoardEvict {
		es.add("Guard.Hoard", int(g.Hoard), "is not a HoardMode")
	}
}

// Validate reports whether the configuration makes sense, with a
// [*ConfigError] for each field that does not (joined when several): a
// Boundary, Regen or TextClass out of range, a negative Ceiling,
// HoardTokens, StubTokens or PointerTokens, and a StubText that is blank (providers
// reject blank tool results, and a blank placeholder tells the model
// nothing). The zero Config is valid. [Guard.Check] validates the
// Context's Config first and changes nothing when this fails.
func (cfg Config) Validate() error {
	var es configErrs
	cfg.validate(&es)
	return es.err()
}

func (cfg *Config) validate(es *configErrs) {
	if cfg.Boundary > BoundaryRelaxed {
		es.add("Config.Boundary", int(cfg.Boundary), "is not a BoundaryMode")
	}
	if cfg.Regen > RegenDropUnsafe {
		es.add("Config.Regen", int(cfg.Regen), "is not a RegenMode")
	}
	if cfg.TextClass > Irreducible {
		es.add("Config.TextClass", int(cfg.TextClass), "is not a Class")
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"Config.Ceiling", cfg.Ceiling}, {"Config.HoardTokens", cfg.HoardTokens}, {"Config.StubTokens", cfg.StubTokens},
		{"Config.PointerTokens", cfg.PointerTokens}} {
		if f.v < 0 {
			es.add(f.name, f.v, "must not be negative")
		}
	}
	if cfg.StubText != "" && strings.TrimSpace(cfg.StubText) == "" {
		es.addText("Config.StubText", strconv.Quote(cfg.StubText), "is blank: providers reject blank tool results")
	}
}

// ValidateFor reports whether g makes sense on c: g's own fields
// ([Guard.Validate]), c's Config ([Config.Validate]), and the two
// together: a Spill store while the Config has no Resolver (the pointers
// of the guard's spills would never count, so nothing spilled could
// leave), a Hoard mode while Config.HoardTokens is not set (nothing is
// ever reported as hoarded), and a Ceiling taken from the Config that is
// below the Budget or the Trigger. A nil c is refused too.
func (g Guard) ValidateFor(c *Context) error {
	if c == nil {
		return &ConfigError{Field: "Context", Reason: "is nil"}
	}
	cfg := c.Config()
	return g.validateFor(&cfg)
}

// valid reports, without allocating, whether g is valid on a Context
// whose Config is valid and reads as s: the path of every check.
func (g *Guard) valid(s *guardView) bool {
	return g.Budget > 0 && g.Ceiling >= 0 && g.Trigger >= 0 && g.MinClear >= 0 && g.Rounds >= 0 && g.HoardKeep >= 0 &&
		(g.Ceiling == 0 || g.Ceiling >= g.Budget) && (g.Trigger == 0 || g.Trigger >= g.Budget) &&
		(g.Trigger == 0 || g.Ceiling == 0 || g.Trigger <= g.Ceiling) && g.Split <= SplitStrict && g.Hoard <= HoardEvict &&
		(g.Spill == nil || s.resolver) && (g.Hoard == HoardReport || s.hoardTokens > 0) &&
		(g.Ceiling > 0 || s.ceiling == 0 || s.ceiling >= g.Budget && (g.Trigger == 0 || g.Trigger <= s.ceiling))
}

// valid reports, without allocating, whether cfg is valid.
func (cfg *Config) valid() bool {
	return cfg.Boundary <= BoundaryRelaxed && cfg.Regen <= RegenDropUnsafe && cfg.TextClass <= Irreducible &&
		cfg.Ceiling >= 0 && cfg.HoardTokens >= 0 && cfg.StubTokens >= 0 && cfg.PointerTokens >= 0 &&
		(cfg.StubText == "" || strings.TrimSpace(cfg.StubText) != "")
}

// cfgValid reports whether the Context's Config is valid, checking it
// once: a Config never changes. Under the read lock.
func (c *Context) cfgValid() bool {
	switch c.mem.cfg.Load() {
	case 1:
		return true
	case 2:
		return false
	}
	ok := c.cfg.valid()
	if ok {
		c.mem.cfg.Store(1)
	} else {
		c.mem.cfg.Store(2)
	}
	return ok
}

// validateFor is ValidateFor on a copy of the Context's Config.
func (g *Guard) validateFor(cfg *Config) error {
	s := guardView{ceiling: cfg.Ceiling, hoardTokens: cfg.HoardTokens, resolver: cfg.Resolver != nil}
	if cfg.valid() && g.valid(&s) {
		return nil
	}
	var es configErrs
	g.validate(&es)
	cfg.validate(&es)
	if g.Spill != nil && cfg.Resolver == nil {
		es.addText("Guard.Spill", "", "is set but Config.Resolver is nil: the pointers of its spills would never count; make the store the Context's Resolver too")
	}
	if g.Hoard != HoardReport && cfg.HoardTokens <= 0 {
		es.add("Guard.Hoard", int(g.Hoard), "acts on hoarding, but Config.HoardTokens is not set")
	}
	if g.Ceiling == 0 && cfg.Ceiling > 0 && g.Budget > 0 {
		if cfg.Ceiling < g.Budget {
			es.add("Config.Ceiling", cfg.Ceiling, "is below Guard.Budget "+strconv.Itoa(g.Budget)+" and the guard has no ceiling of its own")
		}
		if g.Trigger > cfg.Ceiling {
			es.add("Guard.Trigger", g.Trigger, "is above Config.Ceiling "+strconv.Itoa(cfg.Ceiling))
		}
	}
	return es.err()
}
