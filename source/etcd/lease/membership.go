package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/internal/ctxtime"
	"github.com/ginformer/ginformer/internal/lograte"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/source/etcd/internal/classify"
	"github.com/ginformer/ginformer/source/internal/keepalive"
)

// Options configures a [Membership]. Client, Prefix and Name are
// required; every other field's zero value is a safe default.
type Options struct {
	// Client talks to etcd. Required. The membership never closes it.
	Client *clientv3.Client
	// Prefix is where the members register, one key each (Prefix+Name).
	// Required; every replica of one sharded program uses the same prefix,
	// and nothing else may write under it or revoke the members' leases
	// (the guarantee of [shard.Owner] assumes a member's key goes only when
	// it leaves or its lease expires). It should end with "/".
	Prefix string
	// Name is this replica's name, unique among the live replicas (a pod
	// name, a hostname). Required; it must not contain "/". A replica whose
	// name is taken by a live registration waits until that one ends (a
	// restarted process waits out its previous incarnation's lease).
	Name string
	// TTL is the lease's time to live, rounded up to whole seconds. A
	// crashed replica's shards move after about this long; a replica cut
	// off from etcd stops owning within it. etcd may raise it to its
	// minimum (1.5 election timeouts). Zero: 10 s.
	TTL time.Duration
	// MaxClockDrift bounds how much slower this machine's clock may run
	// than the etcd leader's over one TTL (how much less time it may
	// measure while the leader's TTL runs out), as a fraction: the registration
	// counts as valid until send time + TTL·(1 − MaxClockDrift) of its last
	// successful keepalive. Zero: 0.01 (1%). Must be in [0, 0.5).
	MaxClockDrift float64
	// Logger receives the membership's logs (registration and lease loss
	// at info level, etcd failures at error level, rate-limited). Zero:
	// [slog.Default] through [logr.FromSlogHandler].
	Logger logr.Logger
}

// withDefaults validates o and fills in the defaults.
func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Client == nil:
		return o, fmt.Errorf("etcd membership: Client is required: %w", informer.ErrInvalidOptions)
	case o.Prefix == "":
		return o, fmt.Errorf("etcd membership: Prefix is required: %w", informer.ErrInvalidOptions)
	case o.Name == "" || strings.Contains(o.Name, "/"):
		return o, fmt.Errorf("etcd membership: Name %q must be non-empty without '/': %w", o.Name, informer.ErrInvalidOptions)
	case o.TTL < 0:
		return o, fmt.Errorf("etcd membership: negative TTL: %w", informer.ErrInvalidOptions)
	}
	drift, err := keepalive.ClockDrift(o.MaxClockDrift)
	if err != nil {
		return o, fmt.Errorf("etcd membership: %w: %w", err, informer.ErrInvalidOptions)
	}
	o.MaxClockDrift = drift
	if o.TTL == 0 {
		o.TTL = 10 * time.Second
	}
	o.Logger = lograte.OrDefault(o.Logger)
	return o, nil
}

// Membership is a [shard.Membership] built on etcd leases: each replica
// registers a key Prefix+Name attached to a lease it keeps alive; the live
// members are the keys under Prefix, read and watched; each key's value
// records the shards its member holds; claims are transactions. Hand it to
// [shard.NewOwner], which runs it.
//
// How it meets the properties [shard.Membership] lists:
//
//  1. A claim is a transaction whose condition is that every key under
//     Prefix has a mod revision no later than the view's (clientv3.Compare
//     over the prefix) and that this member's key is still attached to its
//     lease; etcd's serializable transactions make two conflicting claims
//     impossible. A release needs only the lease condition.
//  2. A key disappears only when its member revokes its lease (leaving)
//     or etcd expires the lease: TTL after the last keepalive etcd
//     received, measured by the leader (a new leader extends every lease,
//     never shortens one).
//  3. [Membership.ValidUntil] is send time of the last successful
//     keepalive + TTL·(1 − MaxClockDrift) on the local clock: before etcd
//     can have expired the lease, as long as this clock runs at most
//     MaxClockDrift faster than the leader's.
//
// Keepalives are single requests (clientv3 KeepAliveOnce) every TTL/3, so
// their send time is known. A member whose keepalives fail past its
// validity treats its lease as lost: it revokes it (if etcd is reachable),
// and registers again under a new lease, holding nothing.
//
// Safe for concurrent use. Use [New].
type Membership struct {
	opts Options
	log  logr.Logger
	key  string
	ttl  int64 // seconds asked for
	// lease is the current registration: its epoch is the lease ID, its
	// Info the TTL etcd granted.
	lease keepalive.Registration[time.Duration]

	started atomic.Bool

	// mu guards the fields below.
	mu      sync.Mutex
	recs    map[string]memberRecord // by name; nil before the first read
	rev     int64                   // the view's revision
	changed keepalive.Changes       // closed when the view changes
}

// memberRecord is one member's key.
type memberRecord struct {
	held  shard.Set
	lease int64
}

// memberValue is the JSON value of a member's key.
type memberValue struct {
	Shards int    `json:"shards"`
	Held   string `json:"held"`
}

// New validates opts and returns a membership. It does not
// contact etcd.
//
// Possible errors: [informer.ErrInvalidOptions].
func New(opts Options) (*Membership, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Membership{
		opts: opts,
		log:  opts.Logger.WithValues("prefix", opts.Prefix, "member", opts.Name),
		key:  opts.Prefix + opts.Name,
		ttl:  int64((opts.TTL + time.Second - 1) / time.Second),
	}, nil
}

var _ shard.Membership = (*Membership)(nil)

// Name returns this member's name.
func (m *Membership) Name() string { return m.opts.Name }

// ValidUntil returns until when registration epoch (a lease ID) is
// certainly alive in etcd, on the local clock; the zero time if epoch is
// not the current registration.
func (m *Membership) ValidUntil(epoch int64) time.Time { return m.lease.ValidUntil(epoch) }

// Current returns the latest view; ok is false before the first read of the
// prefix. The channel is closed when a newer view is available.
func (m *Membership) Current() (shard.View, <-chan struct{}, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs == nil {
		return shard.View{}, m.changed.C(), false
	}
	v := shard.View{Revision: m.rev}
	if ls := m.lease.Load(); ls != nil {
		if r, ok := m.recs[m.opts.Name]; ok && r.lease == ls.Epoch {
			v.Epoch = ls.Epoch
		}
	}
	for name, r := range m.recs {
		v.Members = append(v.Members, shard.Member{Name: name, Held: r.held})
	}
	keepalive.SortMembers(v.Members)
	return v, m.changed.C(), true
}

// publish tells waiters that the view changed.
func (m *Membership) publish() {
	m.mu.Lock()
	m.changed.Publish()
	m.mu.Unlock()
}

// Claim records that this member holds exactly held, in a transaction
// conditional on every key under the prefix having a mod revision no later
// than base.Revision and on this member's key being on lease base.Epoch.
// See [shard.Membership.Claim].
//
// Possible errors: [shard.ErrConflict], [shard.ErrNotRegistered], the
// client's (classified as by List).
func (m *Membership) Claim(ctx context.Context, base shard.View, held shard.Set) error {
	return m.write(ctx, base.Epoch, held, clientv3.Compare(clientv3.ModRevision(m.opts.Prefix).WithPrefix(), "<", base.Revision+1))
}

// Release records that this member holds exactly held, in a transaction
// conditional on this member's key being on lease epoch. See
// [shard.Membership.Release].
//
// Possible errors: [shard.ErrNotRegistered], the client's.
func (m *Membership) Release(ctx context.Context, epoch int64, held shard.Set) error {
	return m.write(ctx, epoch, held)
}

// write puts this member's record if its key is on lease epoch and the
// extra conditions hold.
func (m *Membership) write(ctx context.Context, epoch int64, held shard.Set, extra ...clientv3.Cmp) error {
	if epoch == 0 {
		return shard.ErrNotRegistered
	}
	val, err := json.Marshal(memberValue{Shards: held.Shards(), Held: held.String()})
	if err != nil {
		return err
	}
	conds := append([]clientv3.Cmp{clientv3.Compare(clientv3.LeaseValue(m.key), "=", epoch)}, extra...)
	resp, err := m.opts.Client.Txn(ctx).If(conds...).
		Then(clientv3.OpPut(m.key, string(val), clientv3.WithLease(clientv3.LeaseID(epoch)))).
		Else(clientv3.OpGet(m.key)).Commit()
	if err != nil {
		return fmt.Errorf("etcd membership: record %s: %w", held, classify.Error(err))
	}
	if resp.Succeeded {
		return nil
	}
	if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) == 0 || kvs[0].Lease != epoch {
		return fmt.Errorf("etcd membership: lease %x: %w", epoch, shard.ErrNotRegistered)
	}
	return fmt.Errorf("etcd membership: membership changed since the view: %w", shard.ErrConflict)
}

// Run registers, keeps the lease alive and watches the prefix until ctx is
// done, then revokes the lease (removing the key: the other members may take
// this one's shards at once) and returns nil once its goroutines have
// returned. See [shard.Membership.Run].
//
// Possible errors: [informer.ErrAlreadyStarted].
func (m *Membership) Run(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return informer.ErrAlreadyStarted
	}
	var wg sync.WaitGroup
	wg.Go(func() { m.watchLoop(ctx) })
	defer wg.Wait()
	backoff := keepalive.Backoff{Min: 100 * time.Millisecond, Max: maxRetryPause(m.opts.TTL)}
	for {
		ls, err := m.register(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if !ctxtime.Sleep(ctx, backoff.Next()) {
				return nil
			}
			continue
		}
		backoff.Reset()
		m.keepAlive(ctx, ls)
		// The lease is lost, or ctx is done: its validity ends now (or
		// ended already: ValidUntil keeps answering with that time), then
		// revoke it (its key goes; the others may take its shards now).
		m.lease.End()
		m.publish()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ls.Info)
		_, err = m.opts.Client.Revoke(rctx, clientv3.LeaseID(ls.Epoch))
		cancel()
		if ctx.Err() != nil {
			if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
				m.log.Info("could not revoke the lease on leaving; it expires by itself", "lease", fmt.Sprintf("%x", ls.Epoch), "err", err)
			}
			return nil
		}
		m.log.Info("lease lost, registering again", "lease", fmt.Sprintf("%x", ls.Epoch))
	}
}

// maxRetryPause is the longest pause between attempts to register or read.
func maxRetryPause(ttl time.Duration) time.Duration { return max(ttl/3, 100*time.Millisecond) }

// register grants a lease and creates the member's key under it; while the
// name is taken by another live key it waits.
func (m *Membership) register(ctx context.Context) (*keepalive.Reg[time.Duration], error) {
	sent := time.Now()
	g, err := m.opts.Client.Grant(ctx, m.ttl)
	if err != nil {
		if ctx.Err() == nil {
			m.log.V(1).Info("grant failed", "err", err)
		}
		return nil, err
	}
	ttl := time.Duration(g.TTL) * time.Second
	val, _ := json.Marshal(memberValue{})
	resp, err := m.opts.Client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(m.key), "=", 0)).
		Then(clientv3.OpPut(m.key, string(val), clientv3.WithLease(g.ID))).
		Commit()
	if err == nil && !resp.Succeeded {
		err = fmt.Errorf("etcd membership: name %q is taken by a live registration; waiting for it to end", m.opts.Name)
		m.log.Info("name taken, waiting", "key", m.key)
	}
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ttl)
		_, _ = m.opts.Client.Revoke(rctx, g.ID)
		cancel()
		return nil, err
	}
	ls := m.lease.Store(int64(g.ID), m.validFrom(sent, ttl), ttl)
	m.publish()
	m.log.Info("registered", "lease", fmt.Sprintf("%x", ls.Epoch), "ttl", ttl)
	return ls, nil
}

// validFrom is the validity of a keepalive sent at sent granting ttl.
func (m *Membership) validFrom(sent time.Time, ttl time.Duration) time.Time {
	return keepalive.ValidFrom(sent, ttl, m.opts.MaxClockDrift)
}

// keepAlive renews the lease every TTL/3 until ctx is done or the lease is
// lost (etcd says it expired, or no keepalive succeeded before its validity
// ended).
func (m *Membership) keepAlive(ctx context.Context, ls *keepalive.Reg[time.Duration]) {
	keepalive.Renew(ctx, ls.Info, m.lease.Until, func(kctx context.Context, sent time.Time) keepalive.Result {
		resp, err := m.opts.Client.KeepAliveOnce(kctx, clientv3.LeaseID(ls.Epoch))
		switch {
		case err == nil:
			m.lease.Renewed(m.validFrom(sent, time.Duration(resp.TTL)*time.Second))
			return keepalive.Renewed
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			return keepalive.Lost
		case ctx.Err() == nil:
			m.log.V(1).Info("keepalive failed, retrying", "err", err)
		}
		return keepalive.Failed
	})
}

// watchLoop keeps the view: a read of the prefix, then a watch from the
// next revision, again after any failure.
func (m *Membership) watchLoop(ctx context.Context) {
	backoff := keepalive.Backoff{Min: 50 * time.Millisecond, Max: maxRetryPause(m.opts.TTL)}
	for ctx.Err() == nil {
		if err := m.readAndWatch(ctx); err != nil && ctx.Err() == nil {
			pause := backoff.Next()
			m.log.V(1).Info("membership watch failed, reading again", "err", err, "in", pause)
			if !ctxtime.Sleep(ctx, pause) {
				return
			}
			continue
		}
		backoff.Reset()
	}
}

func (m *Membership) readAndWatch(ctx context.Context) error {
	resp, err := m.opts.Client.Get(ctx, m.opts.Prefix, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	recs := make(map[string]memberRecord, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if name, r, ok := m.parse(kv); ok {
			recs[name] = r
		}
	}
	m.mu.Lock()
	m.recs, m.rev = recs, resp.Header.Revision
	m.changed.Publish()
	m.mu.Unlock()

	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range m.opts.Client.Watch(wctx, m.opts.Prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
		if err := wr.Err(); err != nil {
			return err
		}
		if len(wr.Events) == 0 {
			continue
		}
		m.mu.Lock()
		for _, ev := range wr.Events {
			name := strings.TrimPrefix(string(ev.Kv.Key), m.opts.Prefix)
			switch ev.Type {
			case mvccpb.PUT:
				if _, r, ok := m.parse(ev.Kv); ok {
					m.recs[name] = r
				}
			case mvccpb.DELETE:
				delete(m.recs, name)
			}
			// The view reflects every change up to the newest event's
			// revision (not the header's, which may run ahead for a
			// watcher catching up).
			m.rev = max(m.rev, ev.Kv.ModRevision)
		}
		m.changed.Publish()
		m.mu.Unlock()
	}
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("etcd membership: watch closed")
}

// parse reads a member's key. A value that does not parse counts as a
// member holding every shard of its space (nothing is taken from it) and is
// logged.
func (m *Membership) parse(kv *mvccpb.KeyValue) (string, memberRecord, bool) {
	name := strings.TrimPrefix(string(kv.Key), m.opts.Prefix)
	if name == "" || strings.Contains(name, "/") {
		return "", memberRecord{}, false
	}
	r := memberRecord{lease: kv.Lease}
	var v memberValue
	err := json.Unmarshal(kv.Value, &v)
	if err == nil && v.Shards != 0 {
		r.held, err = shard.ParseSet(v.Shards, v.Held)
	}
	if err != nil {
		m.log.Error(err, "bad member record; treating it as holding every shard", "key", string(kv.Key))
		n := max(v.Shards, shard.DefaultShards)
		if n > shard.MaxShards {
			n = shard.MaxShards
		}
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		r.held, _ = shard.NewSet(n, all...)
	}
	return name, r, true
}
