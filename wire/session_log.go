package wire

import (
	"context"
	"log/slog"

	"github.com/pruneguard/pruneguard"
)

// The records a Session writes: those of a pruneguard.Guard's check,
// with the session's numbers (see SessionConfig.Logger).

// sessionLoggers returns the logger a session writes its records to,
// SessionConfig.Logger or else Guard.Logger, and the one its core guard
// gets: Guard.Logger with the records of a check left out, so that it
// still writes the refetch and re-expansion records, and the check's
// records, with the whole body's numbers, come from the session alone.
func sessionLoggers(cfg SessionConfig) (log, alerts *slog.Logger) {
	log = cfg.Logger
	if log == nil {
		log = cfg.Guard.Logger
	}
	if cfg.Guard.Logger != nil {
		alerts = slog.New(alertsOnly{cfg.Guard.Logger.Handler()})
	}
	return log, alerts
}

// alertsOnly passes on the records of a guard that are not part of a
// compaction: LogRefetch and LogReexpansion.
type alertsOnly struct{ h slog.Handler }

func (a alertsOnly) Enabled(ctx context.Context, l slog.Level) bool { return a.h.Enabled(ctx, l) }

func (a alertsOnly) Handle(ctx context.Context, r slog.Record) error {
	if r.Message != pruneguard.LogRefetch && r.Message != pruneguard.LogReexpansion {
		return nil
	}
	return a.h.Handle(ctx, r)
}

func (a alertsOnly) WithAttrs(attrs []slog.Attr) slog.Handler {
	return alertsOnly{a.h.WithAttrs(attrs)}
}

func (a alertsOnly) WithGroup(name string) slog.Handler { return alertsOnly{a.h.WithGroup(name)} }

// The statuses of the Agent Client Protocol's compaction_update.
const (
	statusInProgress = "in_progress"
	statusCompleted  = "completed"
	statusCancelled  = "cancelled"
	statusFailed     = "failed"
)

// logDecision writes one record of decision d.
func (s *Session) logDecision(d *pruneguard.Decision, msg string, attrs ...slog.Attr) {
	if s.log == nil {
		return
	}
	var tombs []string
	for _, t := range d.Tombstones {
		tombs = append(tombs, t.Tool)
	}
	attrs = append([]slog.Attr{slog.String("dialect", string(s.cfg.Dialect)),
		slog.Any("units", d.Units), slog.Any("evicted", d.Evict), slog.Any("stubbed", d.Stub),
		slog.Any("withdrawn", d.DropSchemas), slog.Any("tombstoned", tombs), slog.Int("freed", d.Freed)}, attrs...)
	s.log.LogAttrs(context.Background(), slog.LevelInfo, msg, attrs...)
}

// logCheck writes the records of a check that ran: one per applied
// decision, spill, failed spill and refusal, then the LogCheck record
// that ends it, each with the compaction's id and status. target is
// what the check pruned towards, of the whole body. A check that did
// not run (under the trigger), or ran and met nothing, writes nothing.
func (s *Session) logCheck(rep Report, err error, target int) {
	res := &rep.Result
	if s.log == nil || (res.Compaction == "" && err == nil) {
		return
	}
	ctx := context.Background()
	c := slog.String("compaction", res.Compaction)
	run := slog.String("status", statusInProgress)
	dialect := slog.String("dialect", string(s.cfg.Dialect))
	for _, d := range res.Decisions {
		s.logDecision(d, pruneguard.LogDecision, c, run, slog.Int("before", rep.Before), slog.Int("after", rep.After))
	}
	for _, sp := range res.Spills {
		s.log.LogAttrs(ctx, slog.LevelInfo, pruneguard.LogSpill, c, run, dialect, slog.Any("units", sp.Units),
			slog.Any("messages", sp.Messages), slog.String("store", sp.Pointer.Store), slog.String("key", sp.Pointer.Key),
			slog.Int("tokens", sp.Tokens))
	}
	for _, se := range res.SpillErrors {
		s.log.LogAttrs(ctx, slog.LevelWarn, pruneguard.LogSpillFailed, c, run, dialect, slog.Any("units", se.Units),
			slog.Any("messages", se.Messages), slog.String("error", se.Err.Error()))
	}
	for _, r := range rep.Refusals {
		s.log.LogAttrs(ctx, slog.LevelInfo, pruneguard.LogRefusal, c, run, dialect,
			slog.String("gate", r.Gate), slog.String("code", r.Code), slog.Any("units", r.Units),
			slog.Any("messages", r.Messages), slog.Any("indexes", r.Indexes), slog.Any("tools", r.Tools),
			slog.Int("tokens", rep.Before))
	}
	level, status := slog.LevelInfo, statusCompleted
	switch {
	case err != nil:
		level, status = slog.LevelError, statusFailed
	case res.Outcome == pruneguard.Pruned:
	case len(rep.Refusals) == 0 && len(res.SpillErrors) == 0 && rep.Before <= s.trigger():
		return // hoarding with nothing to act on: no compaction took place
	default:
		level, status = slog.LevelWarn, statusCancelled
	}
	attrs := []slog.Attr{c, slog.String("status", status), dialect,
		slog.String("outcome", res.Outcome.String()), slog.Int("before", rep.Before), slog.Int("after", rep.After),
		slog.Int("budget", s.cfg.Guard.Budget), slog.Int("trigger", s.trigger()), slog.Int("target", target),
		slog.Int("ceiling", s.cfg.Guard.Ceiling), slog.Int("decisions", len(res.Decisions)),
		slog.Int("refused", len(rep.Refusals)), slog.Int("spills", len(res.Spills)), slog.Int("spill_errors", len(res.SpillErrors))}
	if res.Reason != nil {
		attrs = append(attrs, slog.String("reason", res.Reason.Error()))
	}
	if !res.Held.IsZero() {
		attrs = append(attrs, slog.Any("held", res.Held))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	s.log.LogAttrs(ctx, level, pruneguard.LogCheck, attrs...)
}
