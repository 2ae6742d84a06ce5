package lease

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/internal/lograte"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/source/internal/keepalive"
)

// Labels and annotations of the Leases a [Membership] writes.
const (
	// GroupLabel is set to [Options.Group] on every Lease
	// of a group (members' and the claims object); the membership lists and
	// watches the Leases of its namespace with this label.
	GroupLabel = "shard.ginformer.io/group"
	// ClaimsAnnotation holds, on the group's claims Lease, the JSON record
	// of what each member holds.
	ClaimsAnnotation = "shard.ginformer.io/claims"
)

// Options configures a [Membership]. Client, Group and
// Name are required; every other field's zero value is a safe default.
type Options struct {
	// Client reads and writes the group's Leases, in its namespace
	// (clientset.CoordinationV1().Leases(ns)). Required. The membership
	// needs get, list, watch, create, update and delete on leases in that
	// namespace, nothing else.
	Client coordinationv1client.LeaseInterface
	// Group names the sharded program: every replica uses the same Group
	// (and namespace), and nothing else may write or delete the Leases
	// labelled [GroupLabel]=Group (the guarantee of [shard.Owner] assumes a
	// member's record goes only when its registration ended). Required; a
	// DNS-1123 label (lowercase letters, digits, '-', at most 63). The
	// claims object is the Lease named Group; each member's is Group.Name.
	Group string
	// Name is this replica's name, unique among the live replicas (a pod
	// name). Required; a DNS-1123 subdomain, with len(Group)+1+len(Name)
	// at most 253. A replica whose name is taken by a live registration
	// waits until that one is judged expired or leaves (a restarted
	// process waits out its previous incarnation's Lease).
	Name string
	// LeaseDuration is the Lease's leaseDurationSeconds, rounded up to
	// whole seconds; the Lease is renewed every third of it. A crashed
	// replica's shards move after about this long; a replica cut off from
	// the apiserver stops owning within it. Zero: 15 s (client-go leader
	// election's default).
	LeaseDuration time.Duration
	// MaxClockDrift bounds how much faster another replica's clock may run
	// than this one's over one LeaseDuration, as a fraction: this member
	// counts its registration valid until send time + LeaseDuration·(1 −
	// MaxClockDrift) of its last successful renewal, while another judges
	// it expired LeaseDuration after it observed that renewal, each on its
	// own clock. Zero: 0.01 (1%). Must be in [0, 0.5).
	MaxClockDrift float64
	// Logger receives the membership's logs (registration, lease loss and
	// expired members at info level; failures to register or to read the
	// group's Leases at error level, rate-limited; single failed renewals
	// and writes, which are retried, at V(1)). Zero:
	// [slog.Default] through [logr.FromSlogHandler].
	Logger logr.Logger
}

// withDefaults validates o and fills in the defaults.
func (o Options) withDefaults() (Options, error) {
	bad := func(format string, args ...any) (Options, error) {
		return o, fmt.Errorf("k8s lease membership: "+format+": %w", append(args, informer.ErrInvalidOptions)...)
	}
	switch {
	case o.Client == nil:
		return bad("Client is required")
	case len(validation.IsDNS1123Label(o.Group)) > 0:
		return bad("Group %q: %s", o.Group, strings.Join(validation.IsDNS1123Label(o.Group), "; "))
	case len(validation.IsDNS1123Subdomain(o.Name)) > 0:
		return bad("Name %q: %s", o.Name, strings.Join(validation.IsDNS1123Subdomain(o.Name), "; "))
	case len(o.Group)+1+len(o.Name) > validation.DNS1123SubdomainMaxLength:
		return bad("Group.Name %q longer than %d", o.Group+"."+o.Name, validation.DNS1123SubdomainMaxLength)
	case o.LeaseDuration < 0:
		return bad("negative LeaseDuration")
	}
	drift, err := keepalive.ClockDrift(o.MaxClockDrift)
	if err != nil {
		return bad("%w", err)
	}
	o.MaxClockDrift = drift
	if o.LeaseDuration == 0 {
		o.LeaseDuration = 15 * time.Second
	}
	o.LeaseDuration = (o.LeaseDuration + time.Second - 1).Truncate(time.Second)
	o.Logger = lograte.OrDefault(o.Logger)
	return o, nil
}

// Membership is a [shard.Membership] built on coordination.k8s.io/v1
// Leases, for replicas that talk to a Kubernetes apiserver. Hand it to
// [shard.NewOwner], which runs it.
//
//   - Liveness: each replica creates a Lease named Group.Name
//     (holderIdentity Name, leaseDurationSeconds, renewTime) and renews it
//     every third of its duration with an Update conditioned on its
//     resourceVersion.
//   - Claims: what every member holds lives in one object, the Lease named
//     Group, as JSON in its [ClaimsAnnotation]; each record names the
//     member, the UID of the member's Lease and the shards it holds. Claims
//     and releases are Updates of that object conditioned on the
//     resourceVersion the view read (409 Conflict → [shard.ErrConflict]).
//   - View: one list then watch of the namespace's Leases labelled
//     [GroupLabel]=Group, so the members' Leases and the claims object come
//     in one stream, in the apiserver's order: each view is the state at one
//     resourceVersion. The members are the holders of the Leases and the
//     names of the records (a record outlives its Lease until it is
//     removed).
//
// # Expiry, judged by observers
//
// The apiserver never expires a Lease. As in client-go's leader election,
// every member judges the others' Leases on its own clock, never by
// comparing timestamps written by another machine: a Lease is expired
// leaseDurationSeconds after this member first observed its current
// resourceVersion (by list, watch or get). A member that judges a Lease
// expired deletes it with preconditions on its UID and resourceVersion, so
// the delete fails if the Lease was renewed meanwhile, even if the observer
// had not yet seen the renewal. Once a Lease incarnation is gone (a get
// answers NotFound or another UID), any member removes its record from the
// claims object.
//
// # How it meets the properties [shard.Membership] lists
//
//  1. A claim is an Update of the single claims object with the
//     resourceVersion the view was built from: the apiserver (etcd
//     underneath) accepts it only if no record changed since. Lease
//     renewals do not touch the records, so they do not conflict with
//     claims. [shard.View.Revision] is local to this membership: it
//     numbers the views it produced; Claim maps it back to the claims
//     object's resourceVersion, which is only ever compared for equality
//     (by the apiserver's precondition), never parsed or ordered.
//  2. A record disappears only when its registration ended: the member
//     removes its own when it leaves (after deleting its Lease, and after
//     the Owner stopped owning), and another member removes it only after
//     a get showed the Lease incarnation named in the record gone. A Lease
//     goes only by its member's delete or by an observer's delete
//     conditioned on the resourceVersion it judged expired.
//  3. [Membership.ValidUntil] is the send time of the last successful
//     renewal (or of the create) + LeaseDuration·(1 − MaxClockDrift). An
//     observer's successful conditional delete proves that renewal was the
//     last write to the Lease; the observer saw it no earlier than it was
//     sent, and deleted it at least LeaseDuration later on its own clock.
//     So the member stops owning before any observer can remove its
//     record, as long as no clock runs faster than another's by more than
//     MaxClockDrift (rates, not offsets: wall clocks need not agree).
//
// A new registration (after a lost Lease, or a restart) creates a new
// Lease, with a new UID, and holds nothing: its first claim replaces the
// record of its name. [shard.View.Epoch] is the Lease's creation
// resourceVersion read as an integer (for apiservers backed by etcd, the
// etcd revision of the create: unique, and later registrations have larger
// epochs); if it is not an integer, a hash of the Lease's UID (unique, not
// ordered).
//
// # Timing
//
// A crashed or cut-off member's shards are acquired elsewhere about
// LeaseDuration after the others observed its last renewal: the first
// observer's expiry timer deletes the Lease, a get and an Update remove the
// record, then the new owners claim. A graceful leave deletes the Lease
// and the record at once.
//
// Safe for concurrent use. Use [New].
type Membership struct {
	opts      Options
	log       logr.Logger
	leaseName string // this member's Lease: Group.Name
	// reg is the current registration: its Info is the Lease's UID.
	reg     keepalive.Registration[string]
	started atomic.Bool
	limit   lograte.Limiter

	// mu guards the fields below, the view as read from the apiserver.
	mu      sync.Mutex
	synced  bool                 // a first list completed
	leases  map[string]*leaseObs // member Leases by object name
	claims  claimsObs            // the claims object
	seq     int64                // the view's revision: bumped on every change
	claimAt int64                // seq at the claims object's last change
	changed keepalive.Changes    // closed when the view changes
}

// New validates opts and returns a membership. It does not
// contact the apiserver.
//
// Possible errors: [informer.ErrInvalidOptions].
func New(opts Options) (*Membership, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Membership{
		opts:      opts,
		log:       opts.Logger.WithValues("group", opts.Group, "member", opts.Name),
		leaseName: opts.Group + "." + opts.Name,
		leases:    map[string]*leaseObs{},
	}, nil
}

var _ shard.Membership = (*Membership)(nil)

// Name returns this member's name.
func (m *Membership) Name() string { return m.opts.Name }

// ValidUntil returns until when registration epoch is certainly alive: no
// other member can have judged its Lease expired before (see
// [Membership] for the clock assumption). The zero time if epoch is
// not the current registration. Two atomic loads.
func (m *Membership) ValidUntil(epoch int64) time.Time { return m.reg.ValidUntil(epoch) }

// Current returns the latest view; ok is false before the first list of the
// group's Leases. The channel is closed when a newer view is available.
func (m *Membership) Current() (shard.View, <-chan struct{}, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// The registration is read under mu: register stores it, then publishes
	// under mu, so a new one is either in this view or closes the channel
	// returned with it. Read before the lock, a registration stored and
	// published in between came back as Epoch 0 with the channel of the
	// view after it, and the Owner claimed nothing until the next Lease
	// event (a renewal: up to LeaseDuration/3 later).
	r := m.reg.Load()
	if !m.synced {
		return shard.View{}, m.changed.C(), false
	}
	v := shard.View{Revision: m.seq}
	names := map[string]shard.Set{}
	for _, l := range m.leases {
		names[l.holder] = shard.Set{}
		if l.name == m.leaseName && r != nil && l.uid == r.Info {
			v.Epoch = r.Epoch
		}
	}
	for name, rec := range m.claims.recs {
		names[name] = rec.held
	}
	for name, held := range names {
		v.Members = append(v.Members, shard.Member{Name: name, Held: held})
	}
	keepalive.SortMembers(v.Members)
	return v, m.changed.C(), true
}

// publishLocked tells waiters that the view changed.
func (m *Membership) publishLocked() {
	m.seq++
	m.changed.Publish()
}

func (m *Membership) publish() {
	m.mu.Lock()
	m.publishLocked()
	m.mu.Unlock()
}

// Run registers, renews the Lease, keeps the view and judges the other
// members' Leases until ctx is done; then it ends this registration's
// validity, deletes its Lease and removes its record (so the others may take
// its shards at once), and returns nil once every goroutine it started has
// returned. If the Lease is lost (not renewed before its validity ended, or
// deleted by an observer), Run registers again under a new epoch. See
// [shard.Membership.Run].
//
// Possible errors: [informer.ErrAlreadyStarted].
func (m *Membership) Run(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return informer.ErrAlreadyStarted
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { m.watchLoop(ctx) })
	wg.Go(func() { m.janitor(ctx) })
	m.registerLoop(ctx)
	return nil
}
