package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/pruneguard/pruneguard/internal/facts"
	"github.com/pruneguard/pruneguard/wire"
)

// config is what one measurement covers.
type config struct {
	cuts    []float64 // where sessions are cut, as fractions of their messages
	budgets []float64 // budgets, as fractions of the past's tokens
	modes   []mode
	tmp     string // a directory for spill stores
}

// result is one mode's run on one cut of one session at one budget.
type result struct {
	session string
	cut     int
	budget  float64
	mode    string

	used, kept, recallable, lost int
	within, valid                bool
	err                          error
	// roomy says whether the budget, less what the output keeps as the
	// past had it, can hold the used facts it does not show verbatim
	// (see holdsFacts).
	roomy bool
}

// measureSession runs every mode at every cut and budget of s.
func measureSession(s *session, c config) []result {
	var out []result
	for _, frac := range c.cuts {
		cut := cutAt(s.msgs, frac)
		if cut < 0 {
			continue
		}
		used := usedFacts(s, cut)
		if len(used) == 0 {
			continue
		}
		past, pastTokens, pastV, err := pastOf(s, cut)
		for _, bf := range c.budgets {
			budget := int(bf * float64(pastTokens))
			for _, m := range c.modes {
				r := result{session: s.name, cut: cut, budget: bf, mode: m.name, used: len(used)}
				if err == nil {
					r.err = r.count(m, past, s.dialect, budget, pastV, used, c.tmp)
				} else {
					r.err = err
				}
				out = append(out, r)
			}
		}
	}
	return out
}

// pastOf returns the body of s.msgs[:cut], its tokens and violations.
func pastOf(s *session, cut int) ([]byte, int, []wire.Violation, error) {
	b, err := wire.Read(s.body, s.dialect)
	if err != nil {
		return nil, 0, nil, err
	}
	later := make([]int, 0, len(s.msgs)-cut)
	for i := cut; i < len(s.msgs); i++ {
		later = append(later, i)
	}
	if err := b.Remove(later); err != nil {
		return nil, 0, nil, err
	}
	past, err := b.Marshal()
	if err != nil {
		return nil, 0, nil, err
	}
	return past, wire.Tokens(b, nil), b.Validate(), nil
}

// count runs mode m and counts each used fact as kept (the body carries
// it), recallable (a segment whose key the body shows carries it) or
// lost, and whether the body is within the budget and valid (it breaks
// no provider rule the past kept).
func (r *result) count(m mode, past []byte, d wire.Dialect, budget int, pastV []wire.Violation, used []usedFact, tmp string) error {
	o, err := m.run(past, d, budget, tmp)
	if err != nil {
		return err
	}
	b, err := wire.Read(o.body, d)
	if err != nil {
		return fmt.Errorf("%s wrote an unreadable body: %w", m.name, err)
	}
	r.within = wire.Tokens(b, nil) <= budget
	r.valid = len(wire.NewViolations(pastV, b.Validate())) == 0
	if r.roomy, err = holdsFacts(past, o.body, d, budget, used); err != nil {
		return err
	}
	body := visibleText(o.body)
	inBody := facts.NewCarrier(body)
	shown := reachable(body, o.recall)
	for _, f := range used {
		switch {
		case inBody.Carries(f.Fact):
			r.kept++
		case carriedBy(shown, f.Fact):
			r.recallable++
		default:
			r.lost++
		}
	}
	return nil
}

// holdsFacts reports whether the budget can hold, beside what an output
// keeps of the past as the past had it (its system messages and
// top-level fields, and each message it kept byte for byte), the used
// facts that this kept part does not show, written together, each once
// with a separator, counted as ApproxCounter counts. It is generous: it
// leaves out what any summary or pointer costs beyond its facts. Where
// it is false, no output that keeps that part within the budget can
// show every used fact, and the share kept in the prompt is bounded by
// the budget and what the mode kept whole.
func holdsFacts(past, out []byte, d wire.Dialect, budget int, used []usedFact) (bool, error) {
	pb, err := wire.Read(past, d)
	if err != nil {
		return false, err
	}
	ob, err := wire.Read(out, d)
	if err != nil {
		return false, err
	}
	kept := map[string]bool{}
	for _, m := range ob.Messages {
		kept[string(m.Raw)] = true
	}
	var gone []int
	for i, m := range pb.Messages {
		if !isSystem(m) && !kept[string(m.Raw)] {
			gone = append(gone, i)
		}
	}
	if err := pb.Remove(gone); err != nil {
		return false, err
	}
	fixed, err := pb.Marshal()
	if err != nil {
		return false, err
	}
	shown := facts.NewCarrier(visibleText(fixed))
	n := 0 // the bytes of the facts not shown, written together, each with "; "
	for _, f := range used {
		if !shown.Carries(f.Fact) {
			n += len(f.Text) + 2
		}
	}
	return wire.Tokens(pb, nil)+(n+3)/4 <= budget, nil
}

// reachable returns the recall answers a model reading body can reach:
// those of the keys body shows, then of the keys those answers show, and
// so on, as a model follows the pointers (a segment can hold a summary
// that carries an earlier segment's key). A segment no key it can see
// names is not reachable, however its words match.
func reachable(body string, recall map[string]string) []*facts.Carrier {
	keys := make([]string, 0, len(recall))
	for k := range recall {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []*facts.Carrier
	seen := map[string]bool{}
	texts := []string{body}
	for len(texts) > 0 {
		text := texts[0]
		texts = texts[1:]
		for _, k := range keys {
			if seen[k] || !strings.Contains(text, k) {
				continue
			}
			seen[k] = true
			answer := visibleText([]byte(recall[k]))
			out = append(out, facts.NewCarrier(answer))
			texts = append(texts, answer)
		}
	}
	return out
}

func carriedBy(cs []*facts.Carrier, f facts.Fact) bool {
	for _, c := range cs {
		if c.Carries(f) {
			return true
		}
	}
	return false
}

// row is the sum of the runs of one mode at one budget.
type row struct {
	mode                         string
	budget                       float64
	runs, within, valid, errs    int
	used, kept, recallable, lost int
	usable                       int // kept or recallable in an output valid and within budget
	// The facts of the runs whose output is valid and within budget:
	// used, and kept in the prompt.
	usedWithin, keptWithin int
	// The same over those of them where the budget can hold the facts
	// used (see holdsFacts), and how many they are.
	roomy, usedRoomy, keptRoomy int
}

// summarize sums results by mode and budget, in the modes' order.
func summarize(rs []result, c config) []row {
	var rows []row
	for _, m := range c.modes {
		for _, bf := range c.budgets {
			w := row{mode: m.name, budget: bf}
			for _, r := range rs {
				if r.mode != m.name || r.budget != bf {
					continue
				}
				w.runs++
				if r.err != nil {
					w.errs++
					continue
				}
				w.used += r.used
				w.kept += r.kept
				w.recallable += r.recallable
				w.lost += r.lost
				if r.within {
					w.within++
				}
				if r.valid {
					w.valid++
				}
				if r.valid && r.within {
					w.usable += r.kept + r.recallable
					w.usedWithin += r.used
					w.keptWithin += r.kept
					if r.roomy {
						w.roomy++
						w.usedRoomy += r.used
						w.keptRoomy += r.kept
					}
				}
			}
			rows = append(rows, w)
		}
	}
	return rows
}

// printTable writes rows as a Markdown table.
func printTable(w io.Writer, title string, rows []row) {
	fmt.Fprintf(w, "\n%s\n\n", title)
	fmt.Fprintln(w, "| mode | budget | runs | facts used | kept | recallable | lost | usable | within budget | valid | errors | where within: usable | where within: kept | where within, facts fit | there: kept |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %.0f%% | %d | %d | %s | %s | %s | %s | %d/%d | %d/%d | %d | %s | %s | %d | %s |\n",
			r.mode, 100*r.budget, r.runs, r.used, pct(r.kept, r.used), pct(r.recallable, r.used), pct(r.lost, r.used),
			pct(r.usable, r.used), r.within, r.runs-r.errs, r.valid, r.runs-r.errs, r.errs,
			pct(r.usable, r.usedWithin), pct(r.keptWithin, r.usedWithin), r.roomy, pct(r.keptRoomy, r.usedRoomy))
	}
}

func pct(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}
