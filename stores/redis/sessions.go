package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pruneguard/pruneguard/sessions"
)

// DefaultSessionPrefix starts the Redis key of every session id when
// Sessions.Prefix is empty.
const DefaultSessionPrefix = "pruneguard:session:"

// Sessions is a [sessions.Store] on a Redis server, shared by the
// processes of a fleet. Each session is a hash under Prefix+id with two
// fields: "v", the version in decimal, and "s", the state sealed with
// its id and version (see [sessions.Seal]). Save and Delete run as Lua
// scripts that compare the version and write in one step, so of Saves
// racing on one session, from any number of hosts, exactly one wins.
// Load refuses a hash whose fields disagree or whose record fails its
// check with [sessions.ErrCorrupt].
//
// Client is any go-redis client (*goredis.Client,
// *goredis.ClusterClient, *goredis.Ring); each session is one key, so
// a cluster may place sessions on any shard. Prefix namespaces the keys
// (default [DefaultSessionPrefix]); Sessions that share a server must
// share it to see each other's sessions, and tenants or deployments
// that must never meet can use prefixes of their own.
//
// TTL, when positive, expires a session TTL after its last Save or
// Touch: every Save and Touch sets the key's expiry to TTL, so a
// session saved or touched within TTL is never expired. Zero, the
// default, expires nothing (a Save clears an expiry left by a Sessions
// with a TTL). Redis's expiry is the only removal that promise covers:
// a maxmemory-policy other than noeviction evicts keys whatever their
// TTL, and a FLUSHDB removes them all. What survives a crash of Redis
// or of its machine is as for [Store] (see the package documentation,
// "Durability"): a lost Save makes the session load as it was before,
// or as missing, never damaged.
//
// Timeout, when positive, bounds each operation within the context the
// caller gives; zero means the caller's context alone governs.
//
// Sessions is a plain value, safe for concurrent use as its Client is.
// The zero Sessions has no client: every method fails with
// [sessions.ErrNoStore].
type Sessions struct {
	Client  goredis.Cmdable
	Prefix  string
	TTL     time.Duration
	Timeout time.Duration
}

var (
	_ sessions.Deleter = Sessions{}
	_ sessions.Toucher = Sessions{}
)

// saveScript stores a record if the version is the one expected.
// KEYS[1]: the session's key; ARGV: expected version ("0": none), new
// version, sealed record, TTL in milliseconds ("0": none). It returns
// {1, new version} or {0, stored version}.
var saveScript = goredis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'v') or '0'
if cur ~= ARGV[1] then return {0, cur} end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 's', ARGV[3])
if ARGV[4] ~= '0' then
	redis.call('PEXPIRE', KEYS[1], ARGV[4])
else
	redis.call('PERSIST', KEYS[1])
end
return {1, ARGV[2]}
`)

// deleteScript deletes a session if its version is the one expected.
// KEYS[1]: the session's key; ARGV[1]: expected version. It returns
// {1, version}, {0, stored version}, or {-1, "0"} when there is none.
var deleteScript = goredis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'v')
if not cur then return {-1, '0'} end
if cur ~= ARGV[1] then return {0, cur} end
redis.call('DEL', KEYS[1])
return {1, cur}
`)

func (s Sessions) key(id string) string {
	if s.Prefix == "" {
		return DefaultSessionPrefix + id
	}
	return s.Prefix + id
}

// start checks the store, id and context, and bounds ctx by Timeout.
func (s Sessions) start(ctx context.Context, op, id string) (context.Context, context.CancelFunc, error) {
	switch {
	case s.Client == nil:
		return ctx, nil, &sessions.IDError{Op: op, ID: id, Err: sessions.ErrNoStore}
	case !sessions.ValidID(id):
		return ctx, nil, &sessions.IDError{Op: op, ID: id, Err: sessions.ErrBadID}
	case ctx.Err() != nil:
		return ctx, nil, &sessions.IDError{Op: op, ID: id, Err: ctx.Err()}
	case s.Timeout > 0:
		ctx, cancel := context.WithTimeout(ctx, s.Timeout)
		return ctx, cancel, nil
	}
	return ctx, func() {}, nil
}

// Load returns the session's state and version once its record checks
// out.
func (s Sessions) Load(ctx context.Context, id string) ([]byte, sessions.Version, error) {
	ctx, cancel, err := s.start(ctx, "load", id)
	if err != nil {
		return nil, sessions.Absent, err
	}
	defer cancel()
	vals, err := s.Client.HMGet(ctx, s.key(id), "v", "s").Result()
	if err != nil {
		return nil, sessions.Absent, &sessions.IDError{Op: "load", ID: id, Err: err}
	}
	state, v, err := unpack(id, vals)
	if err != nil {
		return nil, sessions.Absent, &sessions.IDError{Op: "load", ID: id, Err: err}
	}
	return state, v, nil
}

// unpack checks the fields HMGET returned.
func unpack(id string, vals []any) ([]byte, sessions.Version, error) {
	vs, vok := vals[0].(string)
	rec, sok := vals[1].(string)
	switch {
	case vals[0] == nil && vals[1] == nil:
		return nil, sessions.Absent, sessions.ErrNotFound
	case !vok || !sok:
		return nil, sessions.Absent, fmt.Errorf("%w: a field of the hash is missing", sessions.ErrCorrupt)
	}
	v, err := parseVersion(vs)
	if err != nil {
		return nil, sessions.Absent, err
	}
	state, sv, err := sessions.Unseal(id, []byte(rec))
	if err != nil {
		return nil, sessions.Absent, err
	}
	if sv != v {
		return nil, sessions.Absent, fmt.Errorf("%w: the record holds version %d, the hash says %d", sessions.ErrCorrupt, sv, v)
	}
	return state, v, nil
}

func parseVersion(s string) (sessions.Version, error) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return sessions.Absent, fmt.Errorf("%w: version %q", sessions.ErrCorrupt, s)
	}
	return sessions.Version(v), nil
}

// Save stores state if the session's version is expect, and sets its
// expiry when TTL is positive; see [Sessions] and [sessions.Store].
func (s Sessions) Save(ctx context.Context, id string, state []byte, expect sessions.Version) (sessions.Version, error) {
	ctx, cancel, err := s.start(ctx, "save", id)
	if err != nil {
		return sessions.Absent, err
	}
	defer cancel()
	v := expect.Next()
	ok, stored, err := s.run(ctx, saveScript, id, formatVersion(expect), formatVersion(v), sessions.Seal(id, v, state), s.ttlMillis())
	switch {
	case err != nil:
		return sessions.Absent, &sessions.IDError{Op: "save", ID: id, Err: err}
	case ok != 1:
		return sessions.Absent, &sessions.ConflictError{Op: "save", ID: id, Expect: expect, Stored: stored}
	}
	return v, nil
}

// Delete removes the session if its version is expect; see
// [sessions.Deleter].
func (s Sessions) Delete(ctx context.Context, id string, expect sessions.Version) error {
	ctx, cancel, err := s.start(ctx, "delete", id)
	if err != nil {
		return err
	}
	defer cancel()
	ok, stored, err := s.run(ctx, deleteScript, id, formatVersion(expect))
	switch {
	case err != nil:
		return &sessions.IDError{Op: "delete", ID: id, Err: err}
	case ok == -1:
		return &sessions.IDError{Op: "delete", ID: id, Err: sessions.ErrNotFound}
	case ok != 1:
		return &sessions.ConflictError{Op: "delete", ID: id, Expect: expect, Stored: stored}
	}
	return nil
}

// Touch restarts the session's time to live, when TTL is positive,
// without changing it; see [sessions.Toucher].
func (s Sessions) Touch(ctx context.Context, id string) error {
	ctx, cancel, err := s.start(ctx, "touch", id)
	if err != nil {
		return err
	}
	defer cancel()
	var found bool
	if s.TTL > 0 {
		found, err = s.Client.PExpire(ctx, s.key(id), s.TTL).Result()
	} else {
		var n int64
		n, err = s.Client.Exists(ctx, s.key(id)).Result()
		found = n == 1
	}
	switch {
	case err != nil:
		return &sessions.IDError{Op: "touch", ID: id, Err: err}
	case !found:
		return &sessions.IDError{Op: "touch", ID: id, Err: sessions.ErrNotFound}
	}
	return nil
}

// run runs a script on the session's key and returns its verdict and
// the version it names.
func (s Sessions) run(ctx context.Context, script *goredis.Script, id string, args ...any) (int64, sessions.Version, error) {
	res, err := script.Run(ctx, s.Client, []string{s.key(id)}, args...).Slice()
	if err != nil {
		return 0, sessions.Absent, err
	}
	ok, _ := res[0].(int64)
	vs, _ := res[1].(string)
	v, err := parseVersion(vs)
	return ok, v, err
}

func formatVersion(v sessions.Version) string { return strconv.FormatUint(uint64(v), 10) }

// ttlMillis is TTL in whole milliseconds, at least one when TTL is
// positive; zero for none.
func (s Sessions) ttlMillis() int64 {
	if s.TTL <= 0 {
		return 0
	}
	return max(1, s.TTL.Milliseconds())
}
