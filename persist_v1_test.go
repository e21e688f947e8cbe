package pruneguard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// v1Golden is what a state of version 1 in testdata/state/v1 restored
// to, as the release that wrote it restored it: the Context's public
// state, its alerts, and its decisions on plans.
type v1Golden struct {
	Resolvable []Pointer
	Counter    bool
	Plans      []goldenPlan
	Capture    json.RawMessage
	Refusals   []string
	Alerts     json.RawMessage
	Decisions  []string
}

// goldenPlan is a Plan as JSON holds it: compressions that are not JSON
// as strings.
type goldenPlan struct {
	Evict, Stub []MessageID
	Drop        []string
	Compress    map[string]string
	Split       SplitMode
}

func (g goldenPlan) plan() Plan {
	p := Plan{Evict: g.Evict, Stub: g.Stub, DropSchemas: g.Drop, Split: g.Split}
	for k, v := range g.Compress {
		if p.CompressSchemas == nil {
			p.CompressSchemas = map[string]json.RawMessage{}
		}
		p.CompressSchemas[k] = json.RawMessage(v)
	}
	return p
}

// The states of version 1 that the last release wrote load: the Context
// restored shows what that release restored, decides the same plans the
// same way, and saves version 2, which restores to a Context saving the
// same bytes.
func TestRestoreVersion1(t *testing.T) {
	files, err := filepath.Glob("testdata/state/v1/*.state")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			state, err := os.ReadFile(name)
			require.NoError(t, err)
			require.Contains(t, string(state), `"version":1,`)
			gb, err := os.ReadFile(strings.TrimSuffix(name, ".state") + ".golden.json")
			require.NoError(t, err)
			var g v1Golden
			require.NoError(t, json.Unmarshal(gb, &g))
			set := map[Pointer]bool{}
			for _, p := range g.Resolvable {
				set[p] = true
			}
			cfg := Config{Resolver: ResolverFunc(func(p Pointer) bool { return set[p] })}
			if g.Counter {
				cfg.Counter = ApproxCounter{}
			}
			c, err := Restore(bytes.NewReader(state), cfg)
			require.NoError(t, err)
			got, err := json.Marshal(capture(c))
			require.NoError(t, err)
			var plans []Plan
			for _, gp := range g.Plans {
				plans = append(plans, gp.plan())
			}
			if os.Getenv(updateV1) != "" {
				updateGolden(t, name, g, got, goldenDecisions(c, plans))
				return
			}
			require.JSONEq(t, string(g.Capture), string(got))
			require.Empty(t, c.Refusals())
			alerts, err := json.Marshal(c.TakeAlerts())
			require.NoError(t, err)
			require.JSONEq(t, string(g.Alerts), string(alerts))
			require.Equal(t, g.Decisions, goldenDecisions(c, plans))

			v2 := saved(t, c)
			require.Contains(t, string(v2), `"version":2,`)
			r, err := Restore(bytes.NewReader(v2), cfg)
			require.NoError(t, err)
			require.Equal(t, string(v2), string(saved(t, r)))
			require.Equal(t, g.Decisions, goldenDecisions(r, plans))
		})
	}
}

// updateV1 names the environment variable that, set, has
// TestRestoreVersion1 write what this code restores and decides into the
// golden files, for a change of the public types or of the decisions'
// text made on purpose: the diff then shows what changed.
const updateV1 = "PRUNEGUARD_UPDATE_V1"

// updateGolden writes g with capture and decisions as the golden file of
// the state file name.
func updateGolden(t *testing.T, name string, g v1Golden, capture []byte, decisions []string) {
	g.Capture, g.Decisions = capture, decisions
	b, err := json.Marshal(g)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(strings.TrimSuffix(name, ".state")+".golden.json", append(b, '\n'), 0o644))
}

// goldenDecisions returns what c decides of each plan, as JSON.
func goldenDecisions(c *Context, plans []Plan) []string {
	var out []string
	for _, p := range plans {
		d, err := c.Prune(p)
		if err != nil {
			out = append(out, "error: "+err.Error())
			continue
		}
		b, _ := json.Marshal(decisionFields(d))
		out = append(out, string(b))
	}
	return out
}

// handWritten returns the state persist_format.go shows, as its
// comment writes it (with white space, members in another order than
// Save's), without its digest.
func handWritten(t *testing.T) []byte {
	src, err := os.ReadFile("persist_format.go")
	require.NoError(t, err)
	var lines []string
	for _, l := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(l, "//\t{\"format\"") || len(lines) > 0 && strings.HasPrefix(l, "//\t") {
			lines = append(lines, strings.TrimPrefix(l, "//\t"))
		} else if len(lines) > 0 {
			break
		}
	}
	doc := strings.Join(lines, "\n")
	require.True(t, strings.HasSuffix(doc, `,`+"\n"+` "sha256": "..."}`), doc)
	return []byte(strings.TrimSuffix(doc, `,`+"\n"+` "sha256": "..."}`) + "}")
}

// The state the format's description shows, written by hand and sealed
// as it says (the hex SHA-256 of the object, as a last member),
// restores to the Context it describes.
func TestRestoreHandWrittenState(t *testing.T) {
	obj := handWritten(t)
	sum := sha256.Sum256(obj)
	i := bytes.LastIndexByte(obj, '}')
	state := append(append(bytes.Clone(obj[:i]), `,"sha256":"`+hex.EncodeToString(sum[:])+`"`...), obj[i:]...)
	c, err := Restore(bytes.NewReader(state), Config{})
	require.NoError(t, err)

	require.Equal(t, []CallID{"k2"}, c.Pending())
	require.Equal(t, 98, c.Tokens())
	r1, _ := c.Message("r1")
	require.Equal(t, DefaultStubText, string(r1.Content), "a stubbed result shows the stub")
	deploy, _ := c.Tool("deploy")
	require.False(t, deploy.Resident)
	require.True(t, deploy.Tombstoned)
	require.Empty(t, c.Unsound(), "the tombstone stands for the pending call's arguments")
	grep, _ := c.Tool("grep")
	require.True(t, grep.Resident)
	require.Equal(t, json.RawMessage(`{"type":"object"}`), grep.Tool.Schema)
	require.Empty(t, c.Unread())

	d, err := c.Prune(Plan{Evict: []MessageID{"a1"}, DropSchemas: []string{"grep"}})
	require.NoError(t, err, "a pure read the model has seen may go, with its schema")
	require.Equal(t, []MessageID{"a1", "r1"}, d.Evict)
	require.Equal(t, []string{"grep"}, d.DropSchemas)
	_, err = c.Prune(Plan{Evict: []MessageID{"sys"}, Split: SplitStrict})
	require.ErrorIs(t, err, ErrBoundary)

	// The state Save writes says the same.
	again, err := Restore(bytes.NewReader(saved(t, c)), Config{})
	require.NoError(t, err)
	require.Equal(t, capture(c), capture(again))
	require.Contains(t, string(saved(t, c)), `"checks":4`)
}

// States of version 1 that the last release wrote but could not read
// back load now: a closed message saved as counted (opened with no count,
// its side record kept), and one saved as empty whose stream wrote
// after (opened with empty content).
func TestRestoreVersion1ItsOwnRestoreRefused(t *testing.T) {
	for _, in := range []string{
		`{"format":"pruneguard.context","version":1,"messages":[{"id":"a","unit":0,"counted":true,"isError":true,"neededBy":null}],"units":[{}]}`,
		`{"format":"pruneguard.context","version":1,"messages":[{"id":"a","unit":0,"open":true,"empty":true,"body":"eA==","neededBy":null}],"units":[{}],"open":[0]}`,
	} {
		c, err := Restore(bytes.NewReader(Reseal([]byte(in))), Config{})
		require.NoError(t, err, in)
		m, ok := c.Message("a")
		require.True(t, ok)
		r, err := Restore(bytes.NewReader(saved(t, c)), Config{})
		require.NoError(t, err)
		m2, _ := r.Message("a")
		require.Equal(t, m, m2)
	}
}
