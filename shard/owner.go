package shard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/ginformer/ginformer/internal/lograte"
)

// OwnerOptions configures an [Owner]. Membership is required; every other
// field's zero value is a safe default.
type OwnerOptions struct {
	// Membership is the backend: registration, views and claims. Required.
	// The Owner runs it: do not call its Run yourself.
	Membership Membership
	// Shards is the number of virtual shards. Every replica must use the
	// same number. Zero: [DefaultShards].
	Shards int
	// Hash places keys in the hash space for [Owner.Owns] and for the
	// sharded sources that take it from [Owner.Hash]. Every replica must
	// use the same function. Zero: [HashKey] (for keys the client hashes,
	// such as etcd keys); use [Hash] where the apiserver hashes a uid or
	// namespace.
	Hash func(key string) uint64
	// RetryInterval spaces attempts to record a claim after the backend
	// failed (not after a conflict: a newer view retries at once). Zero:
	// 1 s.
	RetryInterval time.Duration
	// OnChange, if set, is told of every change of what this member owns,
	// in order, on Run's goroutine, without locks held. It must not block
	// for long: handoffs wait for it. Zero: none.
	OnChange func(OwnershipChange)
	// Logger receives the owner's logs (claims, handoffs at V(1); backend
	// failures at error level). Zero: [slog.Default] through
	// [logr.FromSlogHandler].
	Logger logr.Logger
}

// OwnershipChange reports shards this member started or stopped owning.
type OwnershipChange struct {
	// Acquired: [Owner.Owns] returns true for these shards from At on
	// (At is read just before the change takes effect).
	Acquired Set
	// Released: Owns returns false for these shards from At on (At is
	// read just after the change took effect). Shards lost because the
	// registration's validity ended ([Membership.ValidUntil]: the lease
	// could not be renewed in time) are reported with At = that end, when
	// Owns turned false, which is before the report.
	Released Set
	// At is when the change took effect, on the local clock.
	At time.Time
}

// Slice is what a replica should cache: the shards the assignment gives it,
// with a generation that grows each time the set changes.
type Slice struct {
	// Shards are the shards assigned to this member.
	Shards Set
	// Gen numbers the distinct slices an Owner has produced, from 1.
	Gen uint64
}

// Owner decides which keys this replica owns. It follows the assignment of
// the live members ([Assign] over the names in the [Membership]'s view)
// and the handoff rule:
//
//   - A shard the assignment takes away is released at once: Owns returns
//     false for it, then the member's record is rewritten without it.
//   - A shard the assignment gives this member is acquired only when no
//     other live member's record holds it (its old owner released it, or
//     the old owner's lease expired and the server removed its record),
//     by a claim recorded atomically against that view. Owns returns true
//     for it only after the claim is recorded.
//   - Owns is true only while this member's registration is valid
//     ([Membership.ValidUntil]); a member whose lease may have expired
//     stops owning anything at once, and holds nothing under a new
//     registration until it claims again.
//
// # Guarantee
//
// For any key, at any instant, at most one Owner in the cluster returns
// true from Owns(key), provided that:
//
//   - every replica uses the same shard count and hash, and distinct names;
//   - the backend has the properties listed on [Membership] (etcd: a
//     compare-and-swap over the membership prefix, records attached to
//     leases);
//   - clocks do not drift apart by more than the backend's bound during
//     one lease TTL (etcd: [MembershipOptions.MaxClockDrift] in the etcd
//     source, 1% by default): a replica stops owning at send time of its
//     last successful keepalive + TTL·(1 − drift), the server expires the
//     lease no earlier than TTL after receiving it;
//   - the process is not paused between its check of Owns and the action
//     it guards for longer than the time left on its lease (a GC pause or
//     a stopped VM can outlive a lease; fence writes with the member's
//     epoch where that matters, as with any lease-based lock).
//
// The guarantee is per call: Owns answers for the instant it is called. An
// action that takes time should check Owns again before it commits, or
// hold its results until it does.
//
// # Timing
//
// A graceful leave (ctx done) releases everything and ends the
// registration: the new owners acquire within one view propagation (a
// watch event, milliseconds). A join moves the newcomer's shards once each
// old owner has seen the join and released: one view propagation and one
// claim write on each side. A crash or partition is noticed when the
// server expires the lease: the shards are acquired elsewhere within TTL
// plus one view propagation.
//
// What a replica caches ([Owner.Slice]) follows the assignment at once,
// without waiting for the handoff, and its cache lags the slice by one
// relist. After a join the newcomer's slice moves before the old owners
// release, so it usually caches its shards before it may act on them. After
// a crash or a leave the slice and the ownership move together: for the
// length of one relist the new owner may find Owns true for a key its cache
// does not hold yet. The sharded sources' WaitLoaded (etcd.Sharded,
// k8s.Sharded) waits until the cache holds the current slice; call it
// before acting on the keys of shards [OwnerOptions.OnChange] reported
// acquired.
//
// An Owner is safe for concurrent use. Use [NewOwner].
type Owner struct {
	m     Membership
	name  string
	n     int
	retry time.Duration
	log   logr.Logger
	onChg func(OwnershipChange)
	hash  func(string) uint64

	state   atomic.Pointer[ownerState]
	started atomic.Bool

	// mu guards the fields below.
	mu      sync.Mutex
	slice   Slice
	assign  Assignment
	sliceCh chan struct{} // closed when slice changes
	ready   chan struct{} // closed once slice is set
}

// ownerState is what the member holds, under which registration.
type ownerState struct {
	held  Set
	epoch int64
}

// NewOwner validates opts and returns an owner ready to [Owner.Run].
//
// Possible errors: [ErrInvalidOptions], [ErrInvalidShards].
func NewOwner(opts OwnerOptions) (*Owner, error) {
	if opts.Membership == nil {
		return nil, fmt.Errorf("shard: Membership is required: %w", ErrInvalidOptions)
	}
	if opts.Shards == 0 {
		opts.Shards = DefaultShards
	}
	if err := checkShards(opts.Shards); err != nil {
		return nil, err
	}
	if opts.RetryInterval < 0 {
		return nil, fmt.Errorf("shard: negative RetryInterval: %w", ErrInvalidOptions)
	}
	if opts.RetryInterval == 0 {
		opts.RetryInterval = time.Second
	}
	o := &Owner{
		m:       opts.Membership,
		name:    opts.Membership.Name(),
		n:       opts.Shards,
		retry:   opts.RetryInterval,
		onChg:   opts.OnChange,
		hash:    opts.Hash,
		sliceCh: make(chan struct{}),
		ready:   make(chan struct{}),
	}
	if o.hash == nil {
		o.hash = HashKey
	}
	o.log = lograte.OrDefault(opts.Logger).WithValues("member", o.name)
	o.state.Store(&ownerState{})
	return o, nil
}

// Name returns this member's name.
func (o *Owner) Name() string { return o.name }

// Owns reports whether this member owns key now: whether it holds the shard
// of [Owner.Hash](key) under a registration that is still valid. See [Owner]
// for the guarantee. It is cheap (a hash, two atomic loads, a clock read)
// and safe to call from handlers.
func (o *Owner) Owns(key string) bool { return o.OwnsHash(o.hash(key)) }

// Hash places key in the hash space with [OwnerOptions.Hash].
func (o *Owner) Hash(key string) uint64 { return o.hash(key) }

// OwnsHash is [Owner.Owns] for a hash already computed.
func (o *Owner) OwnsHash(h uint64) bool {
	st := o.state.Load()
	if st.epoch == 0 || !st.held.Contains(h) {
		return false
	}
	return time.Now().Before(o.m.ValidUntil(st.epoch))
}

// Held returns the shards this member holds (claimed and not released),
// whether or not its registration is still valid.
func (o *Owner) Held() Set { return o.state.Load().held }

// Assignment returns the assignment of the latest view (this member
// counted in), the zero Assignment before the first view.
func (o *Owner) Assignment() Assignment {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.assign
}

// Slice waits until this member's registration appears in a view (so a
// replica joining a running group does not first cache everything), then
// returns the shards assigned to this member and a channel closed when that
// set changes. The slice follows the assignment without waiting for the
// handoff: a sharded source caches it, so that a new owner has the objects
// when it acquires them. Before Run, Slice waits (bounded by ctx).
//
// Possible errors: ctx.Err().
func (o *Owner) Slice(ctx context.Context) (Slice, <-chan struct{}, error) {
	select {
	case <-o.ready:
	case <-ctx.Done():
		return Slice{}, nil, ctx.Err()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.slice, o.sliceCh, nil
}

// CurrentSlice returns the current slice without waiting; ok is false
// before the first (see [Owner.Slice]).
func (o *Owner) CurrentSlice() (s Slice, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.slice, o.slice.Gen > 0
}

// Run runs the membership and the handoff until ctx is done. It then stops
// owning (every shard released, OnChange told) before it ends the
// membership's registration, so the next owners cannot start before this
// one stopped. It returns nil after every goroutine it started has
// returned, or the membership's error if that one stopped by itself (after
// releasing everything). An owner runs once; if ctx is already done when
// Run is called, Run starts nothing (the membership does not register) and
// returns ctx's error at once, and the owner can still run.
//
// Possible errors: ctx.Err() (wrapped; ctx was done before Run started),
// [ErrAlreadyStarted]; the Membership's Run error.
func (o *Owner) Run(ctx context.Context) error {
	if err := ctx.Err(); err != nil && !o.started.Load() {
		return fmt.Errorf("shard: owner %q: not started, the context is done: %w", o.name, err)
	}
	if !o.started.CompareAndSwap(false, true) {
		return ErrAlreadyStarted
	}
	// The membership outlives ctx until this member stopped owning.
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	merr := make(chan error, 1)
	wg.Go(func() { merr <- o.m.Run(mctx) })
	defer func() {
		o.releaseAll()
		cancel()
		wg.Wait()
	}()

	timer := time.NewTimer(o.retry)
	timer.Stop()
	defer timer.Stop()
	lapseTimer := time.NewTimer(time.Hour)
	lapseTimer.Stop()
	defer lapseTimer.Stop()
	for {
		var retry, lapse <-chan time.Time
		v, changed, ok := o.m.Current()
		if ok && o.reconcile(ctx, v) {
			timer.Reset(o.retry)
			retry = timer.C
		}
		if until, held := o.checkLapse(); held {
			lapseTimer.Reset(time.Until(until))
			lapse = lapseTimer.C
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-merr:
			if err != nil {
				return fmt.Errorf("shard: membership: %w", err)
			}
			return nil
		case <-changed:
		case <-retry:
		case <-lapse:
		}
	}
}

// checkLapse releases everything if the registration's validity has ended
// (reported with At = the end of validity, when Owns turned false), and
// otherwise returns until when it lasts, held false when nothing is held.
func (o *Owner) checkLapse() (until time.Time, held bool) {
	st := o.state.Load()
	if st.held.Empty() {
		return time.Time{}, false
	}
	until = o.m.ValidUntil(st.epoch)
	if now := time.Now(); now.Before(until) {
		return until, true
	} else if until.IsZero() {
		until = now
	}
	o.log.Info("lease validity ended, releasing every shard", "epoch", st.epoch)
	o.state.Store(&ownerState{epoch: st.epoch})
	if o.onChg != nil {
		o.onChg(OwnershipChange{Released: st.held, At: until})
	}
	return time.Time{}, false
}

// reconcile brings what the member holds in line with view v and reports
// whether a failed claim should be retried after RetryInterval.
func (o *Owner) reconcile(ctx context.Context, v View) (retry bool) {
	self := -1
	for i, m := range v.Members {
		if m.Name == o.name {
			self = i
		}
	}
	names := append(v.Names(), o.name)
	a, _ := Assign(o.n, names) // o.n was validated
	target := a.Set(o.name)
	// The first slice waits for this member's own registration in the
	// view, so that a replica joining a running group does not first
	// cache everything.
	if self >= 0 && v.Epoch != 0 || o.hasSlice() {
		o.setTarget(a, target)
	}

	st := o.state.Load()
	held := st.held
	if st.epoch != v.Epoch { // a new registration holds nothing
		if !held.Empty() {
			o.log.V(1).Info("registration changed, releasing every shard", "old", st.epoch, "new", v.Epoch)
		}
		o.update(Set{}, v.Epoch, Set{}, held)
		held = Set{}
	}
	if v.Epoch == 0 || self < 0 || !time.Now().Before(o.m.ValidUntil(v.Epoch)) {
		return false // not registered (yet), or no longer: nothing may be held
	}
	if lost := held.Minus(target); !lost.Empty() {
		held = held.Minus(lost)
		o.update(held, v.Epoch, Set{}, lost)
	}
	// free: the target shards no other record holds, including any this
	// member's own record holds but it does not act on (a claim whose
	// outcome was unknown): those too are acquired by a claim against the
	// view, never taken from the record as it is (it may be stale).
	free := target.Minus(held)
	for i, m := range v.Members {
		if i == self {
			continue
		}
		if n := m.Held.Shards(); n != 0 && n != o.n {
			// Replicas configured with different shard counts: nothing
			// can be acquired safely until that is fixed.
			o.log.Error(ErrInvalidShards, "a member uses another shard count; acquiring nothing", "other", m.Name, "shards", n, "mine", o.n)
			free = Set{}
			break
		}
		free = free.Minus(m.Held)
	}
	var err error
	switch {
	case !free.Empty():
		want := held.Union(free)
		if err = o.m.Claim(ctx, v, want); err == nil {
			o.log.V(1).Info("acquired shards", "shards", free.String(), "revision", v.Revision)
			o.update(want, v.Epoch, free, Set{})
			return false
		}
	case !held.Equal(v.Members[self].Held):
		err = o.m.Release(ctx, v.Epoch, held)
	}
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrConflict), errors.Is(err, ErrNotRegistered), ctx.Err() != nil:
		return false // a newer view comes
	default:
		o.log.Error(err, "recording claim failed, will retry", "retryIn", o.retry)
		return true
	}
}

// update publishes what the member holds, then tells OnChange. Acquisitions
// read the time before they take effect, releases after.
func (o *Owner) update(held Set, epoch int64, acquired, released Set) {
	var at time.Time
	if !acquired.Empty() {
		at = time.Now()
	}
	o.state.Store(&ownerState{held: held, epoch: epoch})
	if acquired.Empty() {
		at = time.Now()
	}
	if !released.Empty() {
		o.log.V(1).Info("released shards", "shards", released.String())
	}
	if o.onChg != nil && (!acquired.Empty() || !released.Empty()) {
		o.onChg(OwnershipChange{Acquired: acquired, Released: released, At: at})
	}
}

// releaseAll stops owning everything (Run's end).
func (o *Owner) releaseAll() {
	st := o.state.Load()
	o.update(Set{}, st.epoch, Set{}, st.held)
}

// hasSlice reports whether a first slice was published.
func (o *Owner) hasSlice() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.slice.Gen > 0
}

// setTarget publishes the slice to cache if it changed.
func (o *Owner) setTarget(a Assignment, target Set) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.assign = a
	if o.slice.Gen > 0 && o.slice.Shards.Equal(target) {
		return
	}
	first := o.slice.Gen == 0
	o.slice = Slice{Shards: target, Gen: o.slice.Gen + 1}
	if o.log.V(1).Enabled() {
		o.log.V(1).Info("slice changed", "gen", o.slice.Gen, "shards", target.Len(), "members", slices.Clone(a.members))
	}
	close(o.sliceCh)
	o.sliceCh = make(chan struct{})
	if first {
		close(o.ready)
	}
}
