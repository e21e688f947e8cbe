package storetest

import (
	"github.com/pruneguard/pruneguard/internal/storecheck"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pruneguard/pruneguard"
	"github.com/pruneguard/pruneguard/sessions"
	"github.com/pruneguard/pruneguard/spill"
)

// Tenancy checks that two tenants of a fleet sharing one session store
// and one spill store stay apart, as a runtime keeps them when it names
// every session with [sessions.ID] and every Spiller's namespace with
// [spill.Namespace], the tenant being the authenticated account and the
// conversation a name the client picks. One tenant saves a session whose
// Context spilled content; the other, picking conversation names meant
// to reach it (the first tenant's conversation, its session id, its
// namespace, names with the separators those use), must load no session
// of the first tenant's, and its Spillers must neither recall, verify
// nor find by searching the first tenant's segments, even given their
// exact keys. The first tenant, from another process (new Spillers),
// must still load, recall and find its own. Tenant names are unique to
// the run, so the stores may outlive it (a shared server).
//
// It returns nil when the stores keep tenants apart, or an error listing
// every way they do not.
func Tenancy(ctx context.Context, s sessions.Store, sp spill.Store) error {
	run := storecheck.RandomHex(6)
	acme, globex := "acme-"+run, "globex-"+run
	const conv, secret = "conv-1", "INC-4711 acme-only-secret"
	id := sessions.ID(acme, conv)
	ptr, state, err := spillAndSave(ctx, s, sp, acme, conv, secret)
	if err != nil {
		return fmt.Errorf("the first tenant's session: %w", err)
	}
	var errs []error
	for _, name := range hostileNames(acme, conv) {
		errs = append(errs, apart(ctx, s, sp, globex, name, id, ptr, secret))
	}
	errs = append(errs, ownSeen(ctx, s, sp, acme, conv, id, state, ptr, secret))
	return joinSome(errs)
}

// hostileNames are the conversation names another tenant might pick to
// reach tenant's session conv.
func hostileNames(tenant, conv string) []string {
	id := sessions.ID(tenant, conv)
	ns := spill.Namespace(tenant, conv)
	return []string{
		conv, id, ns, "", tenant, tenant + "__" + conv, tenant + "/" + conv,
		"../" + id, "/" + ns, "__" + id, "%2F" + conv, strings.ToUpper(id),
	}
}

// spillAndSave spills a result of a Context of tenant's conversation,
// then saves the Context as the conversation's session.
func spillAndSave(ctx context.Context, s sessions.Store, sp spill.Store, tenant, conv, secret string) (pruneguard.Pointer, []byte, error) {
	spiller := &spill.Spiller{Store: sp, Namespace: spill.Namespace(tenant, conv)}
	c := pruneguard.NewContext(pruneguard.Config{Resolver: spiller})
	for _, m := range []pruneguard.Message{
		{ID: "u1", Role: pruneguard.RoleUser, Tokens: 10, Content: []byte("look up the incident")},
		{ID: "a1", Role: pruneguard.RoleAssistant, Tokens: 10, Calls: []pruneguard.Call{{ID: "c1", Tool: "lookup"}}},
		{ID: "r1", Role: pruneguard.RoleTool, Tokens: 50, Answers: []pruneguard.CallID{"c1"}, Content: []byte(secret)},
	} {
		if err := c.Append(m); err != nil {
			return pruneguard.Pointer{}, nil, err
		}
	}
	p, err := spiller.Spill(ctx, c, "r1")
	if err != nil {
		return p, nil, err
	}
	var b bytes.Buffer
	if err := c.Save(&b); err != nil {
		return p, nil, err
	}
	_, err = s.Save(ctx, sessions.ID(tenant, conv), b.Bytes(), sessions.Absent)
	return p, b.Bytes(), err
}

// apart checks that tenant, naming a conversation name, reaches neither
// the session id nor the segment of p, which holds secret.
func apart(ctx context.Context, s sessions.Store, sp spill.Store, tenant, name, id string, p pruneguard.Pointer, secret string) error {
	var errs []error
	mine := sessions.ID(tenant, name)
	if mine == id {
		return fmt.Errorf("tenant %q, conversation %q: sessions.ID names the other tenant's session %q", tenant, name, id)
	}
	if b, _, err := s.Load(ctx, mine); !errors.Is(err, sessions.ErrNotFound) {
		errs = append(errs, fmt.Errorf("tenant %q, conversation %q: Load(%q) = %d bytes, %v; want sessions.ErrNotFound", tenant, name, mine, len(b), err))
	}
	spiller := &spill.Spiller{Store: sp, Namespace: spill.Namespace(tenant, name)}
	if ms, err := spiller.Recall(ctx, p); !errors.Is(err, spill.ErrNotFound) {
		errs = append(errs, fmt.Errorf("tenant %q, conversation %q: Recall(%s) = %d messages, %v; want spill.ErrNotFound", tenant, name, p.Key, len(ms), err))
	}
	if err := spiller.Verify(ctx, p); err == nil {
		errs = append(errs, fmt.Errorf("tenant %q, conversation %q: Verify(%s) succeeded", tenant, name, p.Key))
	}
	for _, args := range []string{`{"key":"` + p.Key + `"}`, `{"query":"acme-only-secret"}`} {
		out, err := spiller.HandleRecall(ctx, json.RawMessage(args))
		if strings.Contains(out, secret) || (err != nil && strings.Contains(err.Error(), secret)) {
			errs = append(errs, fmt.Errorf("tenant %q, conversation %q: recall %s answered the other tenant's content", tenant, name, args))
		}
	}
	if hits, err := spiller.Search(ctx, "acme-only-secret"); err != nil || len(hits) > 0 {
		errs = append(errs, fmt.Errorf("tenant %q, conversation %q: Search found %d hits, %v; want none", tenant, name, len(hits), err))
	}
	return errors.Join(errs...)
}

// ownSeen checks that tenant, from another process, loads its session
// as saved, restores it, and recalls and finds its spilled content.
func ownSeen(ctx context.Context, s sessions.Store, sp spill.Store, tenant, conv, id string, state []byte, p pruneguard.Pointer, secret string) error {
	got, _, err := s.Load(ctx, id)
	if err != nil || !bytes.Equal(got, state) {
		return fmt.Errorf("the tenant's own session: Load(%q) = %d bytes, %v; want the %d saved", id, len(got), err, len(state))
	}
	spiller := &spill.Spiller{Store: sp, Namespace: spill.Namespace(tenant, conv)}
	c, err := pruneguard.RestoreContext(ctx, bytes.NewReader(got), pruneguard.Config{Resolver: spiller})
	if err != nil {
		return fmt.Errorf("the tenant's own session does not restore: %w", err)
	}
	if m, ok := c.Message("r1"); !ok || m.Pointer != p {
		return fmt.Errorf("the tenant's restored session lost the pointer of its spilled result")
	}
	ms, err := spiller.Recall(ctx, p)
	if err != nil || len(ms) != 1 || string(ms[0].Content) != secret {
		return fmt.Errorf("the tenant's own Recall(%s) = %d messages, %v", p.Key, len(ms), err)
	}
	if hits, err := spiller.Search(ctx, "acme-only-secret"); err != nil || len(hits) == 0 {
		return fmt.Errorf("the tenant's own Search found %d hits, %v", len(hits), err)
	}
	return nil
}
