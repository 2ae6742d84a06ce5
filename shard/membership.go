package shard

import (
	"context"
	"time"
)

// Member is a live member of a [View].
type Member struct {
	// Name is the member's name, unique among live members.
	Name string
	// Held is the set of shards the member has claimed ([Membership.Claim])
	// and may be acting on. Empty for a member that has just joined.
	Held Set
}

// View is a consistent snapshot of the membership as a backend read it.
type View struct {
	// Revision orders views: a later view has a larger revision. For etcd,
	// the store revision the view reflects. A [Membership.Claim] based on a
	// view succeeds only if no member changed after Revision.
	Revision int64
	// Epoch identifies this member's current registration (for etcd, its
	// lease ID); 0 when it has none (not yet registered, or its lease was
	// lost and it is registering again). Shards are held per epoch: a new
	// registration holds nothing.
	Epoch int64
	// Members are the live members sorted by name, this one included once
	// registered.
	Members []Member
}

// Names returns the names of the view's members, sorted.
func (v View) Names() []string {
	out := make([]string, len(v.Members))
	for i, m := range v.Members {
		out[i] = m.Name
	}
	return out
}

// Membership is what a backend provides to an [Owner]: a registration of
// this replica that lives as long as a lease the backend keeps alive, a
// consistent view of the live members and what each holds, and a
// compare-and-swap to record what this member holds. Implementations must
// be safe for concurrent use.
//
// The safety of [Owner] rests on three properties a backend must have:
//
//  1. Claim is atomic against the view: it is recorded only if no
//     member's record changed after the view's Revision (a
//     compare-and-swap over every member's record).
//  2. A member's record disappears only when its registration ends: by
//     its own leave, or by its lease expiring at the server.
//  3. ValidUntil(epoch) is never later than the moment the server may
//     expire that registration's lease, given the clock-drift bound the
//     backend documents: computed from the time a keepalive was sent, not
//     received.
type Membership interface {
	// Name returns this member's name.
	Name() string
	// Run registers this member, keeps its lease alive and keeps the view
	// current until ctx is done, then ends the registration (so the others
	// may take its shards at once) and returns nil once every goroutine it
	// started has returned. If the lease is lost (expired during a
	// partition), Run registers again under a new epoch. It returns an
	// error only if it cannot run at all. Run may be called once.
	Run(ctx context.Context) error
	// Current returns the latest view and a channel closed when a newer
	// one is available (or when Run has returned: then the view is final).
	// ok is false before the first complete view. Every change, this
	// member's registration (Epoch) included, must either show in the view
	// returned or close the channel returned with it: read the view and the
	// channel under the lock the change is published under. A view older
	// than its channel is a lost wakeup: the Owner waits on that channel
	// and acts on nothing until some later change.
	Current() (v View, changed <-chan struct{}, ok bool)
	// Claim records that this member holds exactly held (replacing what
	// its record held), only if no member's record changed after
	// base.Revision and the registration is still base.Epoch. The Owner
	// claims to acquire shards.
	//
	// Possible errors: [ErrConflict], [ErrNotRegistered], the backend's
	// (unreachable server; then nothing may be known about the outcome, and
	// the next view tells).
	Claim(ctx context.Context, base View, held Set) error
	// Release records that this member holds exactly held, whatever
	// changed since, as long as the registration is still epoch. The Owner
	// releases only shards it already stopped owning, so the write needs no
	// other condition.
	//
	// Possible errors: [ErrNotRegistered], the backend's.
	Release(ctx context.Context, epoch int64, held Set) error
	// ValidUntil returns the time (local clock) until which registration
	// epoch is certainly alive at the server, the zero time if epoch is not
	// the current registration. It must be cheap: [Owner.Owns] calls it.
	ValidUntil(epoch int64) time.Time
}
