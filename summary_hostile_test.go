package pruneguard_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	pg "github.com/pruneguard/pruneguard"
)

// hostileSession is a short session whose user message holds facts that
// cannot be had again, followed by a turn that stays.
func hostileSession(t *testing.T, userText string) *pg.Context {
	t.Helper()
	c := pg.NewContext(pg.Config{})
	for _, m := range []pg.Message{
		{ID: "sys", Role: pg.RoleSystem, Pinned: true, Tokens: 10, Content: []byte("You are an agent.")},
		{ID: "u1", Role: pg.RoleUser, Tokens: 400, Content: []byte(userText)},
		{ID: "a1", Role: pg.RoleAssistant, Tokens: 400, Content: []byte("Understood.")},
		{ID: "u2", Role: pg.RoleUser, Tokens: 10, Content: []byte("Go on.")},
		{ID: "a2", Role: pg.RoleAssistant, Tokens: 10, Content: []byte("Working.")},
	} {
		require.NoError(t, c.Append(m))
	}
	return c
}

func summaryOf(text string, ids ...pg.MessageID) pg.Plan {
	return pg.Plan{Summary: &pg.Summary{Replace: ids, ID: "s1", Text: text}}
}

// missing returns the texts of the facts a CodeMissingFact violation of
// err names, or fails.
func missing(t *testing.T, err error) []string {
	t.Helper()
	var pe *pg.PruneError
	require.ErrorAs(t, err, &pe)
	var out []string
	for _, v := range pe.Violations {
		if v.Code == pg.CodeMissingFact {
			for _, f := range v.Facts {
				out = append(out, f.Text)
			}
		}
	}
	require.NotEmpty(t, out, "no missing-fact violation: %v", pe.Violations)
	return out
}

// A fact is carried verbatim, white space runs as one space, nothing
// else forgiven: not another case, not a fact written inside a longer
// one, in any order of the facts.
func TestHostileFactCarriedVerbatim(t *testing.T) {
	user := "Ticket INC-4711 is open. Never restart prod-db-2.\nThe log is /etc/security/limits.conf."
	cases := []struct {
		name, text string
		ok         bool
	}{
		{"all, reordered", "Log: /etc/security/limits.conf; keep prod-db-2 up; ticket INC-4711.", true},
		{"white space changed", "ticket\n\tINC-4711,   prod-db-2 and\n/etc/security/limits.conf", true},
		{"another case", "ticket inc-4711, prod-db-2, /etc/security/limits.conf", false},
		{"a digit dropped", "ticket INC-471, prod-db-2, /etc/security/limits.conf", false},
		{"a digit added", "ticket INC-47111, prod-db-2, /etc/security/limits.conf", false},
		{"inside a longer word", "ticket XINC-4711, prod-db-2, /etc/security/limits.conf", false},
		{"inside a longer path", "ticket INC-4711, prod-db-2, /opt/etc/security/limits.conf", false},
		{"inside a longer relative path", "ticket INC-4711, prod-db-2, ./etc/security/limits.conf", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := hostileSession(t, user)
			_, err := c.Prune(summaryOf(tc.text, "u1", "a1"))
			if tc.ok {
				require.NoError(t, err)
				return
			}
			assert.NotEmpty(t, missing(t, err))
		})
	}
}

// A setting is carried as the Fact's text, and in the other forms the
// Fact documentation lists; its value changed is not.
func TestHostileSettingForms(t *testing.T) {
	for text, ok := range map[string]bool{
		"run with dry_run=true":      true,
		"run with dry_run: true":     true,
		`run with {"dry_run": true}`: true,
		"run with dry_run=false":     false,
		"run with DRY_RUN=true":      false,
	} {
		c := hostileSession(t, "Deploy the service with dry_run=true only.")
		_, err := c.Prune(summaryOf(text, "u1", "a1"))
		if ok {
			assert.NoError(t, err, text)
		} else {
			assert.Contains(t, missing(t, err), "dry_run=true", text)
		}
	}
}
