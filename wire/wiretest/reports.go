package wiretest

import (
	"errors"
	"fmt"
	"sync"

	"github.com/pruneguard/pruneguard/wire"
)

// Reports keeps what a middleware reports, in the order it comes: give
// [Reports.Add] as the middleware's OnReport. The zero Reports is ready
// to use; it is safe for concurrent use.
type Reports struct {
	mu   sync.Mutex
	list []wire.Report
	errs []error
}

// Add keeps a report and its error. It has the signature of an OnReport
// (wire.ConversationsConfig.OnReport and the SDK middlewares').
func (r *Reports) Add(conversation string, rep wire.Report, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, rep)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("report %d, conversation %q: %w", len(r.list)-1, conversation, err))
	}
}

// List returns the reports kept so far, in order.
func (r *Reports) List() []wire.Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]wire.Report(nil), r.list...)
}

// Err returns the errors reported so far, joined (errors.Join), each
// naming its report's index and conversation, or nil when there are none.
func (r *Reports) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

// Guarded returns how many reports say the guard ran.
func (r *Reports) Guarded() int {
	n := 0
	for _, rep := range r.List() {
		if rep.Guarded {
			n++
		}
	}
	return n
}

// Summaries returns how many summaries the reports list.
func (r *Reports) Summaries() int {
	n := 0
	for _, rep := range r.List() {
		n += len(rep.Summarized)
	}
	return n
}

// Check returns the errors reported and an error for each report whose
// request went out with more than limit tokens (After), joined
// (errors.Join), or nil when there are none.
func (r *Reports) Check(limit int) error {
	errs := []error{r.Err()}
	for i, rep := range r.List() {
		if rep.After > limit {
			errs = append(errs, fmt.Errorf("request %d sent with %d tokens, over %d", i, rep.After, limit))
		}
	}
	return errors.Join(errs...)
}

// CheckRun is [Reports.Check] for a run of n requests that all went
// through p: it adds an error when p accepted another number of requests
// or the reports are not n, when a report's After is not the token count
// (with the default counter) of the body p received for it, and when no
// report says the guard ran. It suits a run through one middleware with
// the default counter whose every request p accepted.
func (r *Reports) CheckRun(p *Provider, n, limit int) error {
	errs := []error{r.Check(limit)}
	list := r.List()
	if p.Count() != n || len(list) != n {
		return errors.Join(append(errs, fmt.Errorf("%d requests reached the provider, %d reports, want %d", p.Count(), len(list), n))...)
	}
	for i, rep := range list {
		if got := wire.Tokens(p.Read(i), nil); got != rep.After {
			errs = append(errs, fmt.Errorf("request %d: the report says %d tokens, the provider got %d", i, rep.After, got))
		}
	}
	if r.Guarded() == 0 {
		errs = append(errs, errors.New("no request was guarded"))
	}
	return errors.Join(errs...)
}
