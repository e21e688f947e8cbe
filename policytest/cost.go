package policytest

import (
	"math"
	"runtime"
	"sync"

	"github.com/pruneguard/pruneguard"
)

// The cost of a plan: a policy that walks the View and stops once it has
// enough costs what it proposes, however long the session. The suite
// measures the bytes Propose allocates, which every step of a View's
// walks and every message of a snapshot costs, on Contexts of 1,000 and
// 100,000 messages of the same kind, for the same small need.

// Sizes of the two Contexts, in rounds of a call and its result.
const (
	fewRounds  = 476
	manyRounds = 47_620 // with the user's messages, 100,005 messages
)

// costNeed is the need the policy is asked for: a few units' worth.
const costNeed = 5000

// The Contexts of the cost check, built once: policies only read them.
var (
	smallContext = sync.OnceValue(func() *pruneguard.Context { return longSession(fewRounds) })
	largeContext = sync.OnceValue(func() *pruneguard.Context { return longSession(manyRounds) })
	largeLayout  = sync.OnceValue(func() *layout { return layoutOf(largeContext()) })
)

func longSession(rounds int) *pruneguard.Context {
	b := newBuilder(pruneguard.Config{})
	b.start()
	b.loop(rounds, 2000)
	b.say(40)
	return b.c
}

// costs checks the plans for the large Context as any other, then
// compares what Propose allocated there, for each message it proposed,
// with what it allocated on the small one.
func costs(newPolicy func() pruneguard.Policy) []*Finding {
	r := &report{name: "many units", need: costNeed}
	big := largeContext()
	pol := newPolicy()
	v := big.View()
	kept, keeps, ok := r.kept(pol, v)
	if !ok {
		return r.out
	}
	p, ok := r.propose(pol, v, costNeed)
	if !ok {
		return r.out
	}
	x := withLayout(largeLayout())
	r.plan(x, v, p, kept, keeps)
	r.warnings(x, v, p, kept, keeps)

	few, fewN, ok := r.allocated(newPolicy(), smallContext(), true)
	if !ok {
		return r.out
	}
	many, manyN, ok := r.allocated(pol, big, false) // warm from the plan checked
	if !ok {
		return r.out
	}
	const slack = 64 << 10 // what a policy may allocate whatever it proposes
	perFew := float64(few+slack) / float64(fewN+1)
	perMany := float64(many+slack) / float64(manyN+1)
	if perMany > 10*perFew {
		r.add(ErrCost, true, nil, "Propose allocated %d bytes proposing %d messages on %d messages, and %d bytes proposing %d on %d",
			many, manyN, big.Len(), few, fewN, smallContext().Len())
	}
	return r.out
}

// allocated returns the fewest bytes a Propose of pol for costNeed
// allocated on c in two tries, after one to warm up if warm says, and
// how many messages it proposed. The bytes are those every goroutine
// allocated meanwhile: taking the fewest keeps out most of what others
// do.
func (r *report) allocated(pol pruneguard.Policy, c *pruneguard.Context, warm bool) (bytes uint64, n int, ok bool) {
	if warm {
		if _, ok := r.propose(pol, c.View(), costNeed); !ok {
			return 0, 0, false
		}
	}
	bytes = math.MaxUint64
	var before, after runtime.MemStats
	for range 2 {
		v := c.View()
		runtime.ReadMemStats(&before)
		p, ok := r.propose(pol, v, costNeed)
		runtime.ReadMemStats(&after)
		if !ok {
			return 0, 0, false
		}
		bytes = min(bytes, after.TotalAlloc-before.TotalAlloc)
		n = len(p.Evict) + len(p.Stub)
		if p.Summary != nil {
			n += len(p.Summary.Replace)
		}
	}
	return bytes, n, true
}
