package lease_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/shard/shardtest"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
	"github.com/ginformer/ginformer/source/k8s/lease"
)

// TestLeaseMembershipShards runs 3 replicas, adds a 4th, cuts one off
// without releasing its Lease, and stops one gracefully; after each step
// every shard is held exactly once, and throughout, no shard is owned by
// two replicas at once (OnChange intervals on one clock, and every Owns
// sample inside its replica's interval).
func TestLeaseMembershipShards(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	rec := shardtest.NewOwnership()
	// Checked after every replica has stopped (cleanups run last-in
	// first-out): an acquisition is published before OnChange records it,
	// so a check while owners run can see a sample before its interval.
	t.Cleanup(func() { rec.Check(t) })

	r0 := startLeaseReplica(t, ns, "ctl", "r0", rec)
	r1 := startLeaseReplica(t, ns, "ctl", "r1", rec)
	r2 := startLeaseReplica(t, ns, "ctl", "r2", rec)
	took := leaseWaitFor(t, rec, 20*time.Second, func() error { return leaseSettled(r0, r1, r2) })
	t.Logf("3 replicas: every shard owned once after %v", took.Round(time.Millisecond))
	epoch2, _, _ := r2.m.Current()

	// A join moves only the shards the newcomer takes, about 1/N.
	before := map[string]shard.Set{}
	for _, r := range []*leaseReplica{r0, r1, r2} {
		before[r.name] = r.owner.Held()
	}
	r3 := startLeaseReplica(t, ns, "ctl", "r3", rec)
	took = leaseWaitFor(t, rec, 20*time.Second, func() error { return leaseSettled(r0, r1, r2, r3) })
	moved := 0
	for _, r := range []*leaseReplica{r0, r1, r2} {
		after := r.owner.Held()
		require.True(t, after.Minus(before[r.name]).Empty(), "%s gained shards on a join", r.name)
		moved += before[r.name].Len() - after.Len()
	}
	require.Equal(t, r3.owner.Held().Len(), moved)
	require.LessOrEqual(t, moved, shard.DefaultShards/4+40, "a join moved more than about 1/N")
	t.Logf("join: %d of %d shards moved (1/N = %d), all owned by the newcomer after %v",
		moved, shard.DefaultShards, shard.DefaultShards/4, took.Round(time.Millisecond))

	// A replica cut off keeps its Lease and record: the others judge the
	// Lease expired k8stest.LeaseDuration after they observed its last
	// renewal, delete it, remove the record and take its shards.
	r1.net.Cut()
	took = leaseWaitFor(t, rec, 4*k8stest.LeaseDuration, func() error { return leaseSettled(r0, r2, r3) })
	t.Logf("cut off: its shards owned elsewhere %v after the cut (lease duration %v)", took.Round(time.Millisecond), k8stest.LeaseDuration)
	// The lease duration runs from the others' observation of the last
	// renewal, which may follow the cut by a watch delay; then a delete, a
	// get, an update of the claims object and the claims.
	require.Less(t, took, k8stest.LeaseDuration+2*time.Second, "shards moved later than the lease duration + 2 s")
	for _, k := range leaseKeys() {
		require.False(t, r1.owner.Owns(k), "the cut-off replica still owns %s after its lease's validity", k)
	}
	r1.stop()

	// A graceful leave deletes the Lease and the record at once.
	start := time.Now()
	r0.stop()
	took = leaseWaitFor(t, rec, 4*k8stest.LeaseDuration, func() error { return leaseSettled(r2, r3) })
	t.Logf("graceful leave: its shards owned elsewhere %v after the leave began", time.Since(start).Round(time.Millisecond))
	require.Less(t, took, k8stest.LeaseDuration, "a graceful leave waited for expiry")

	// The view of a survivor: exactly the live members.
	v, _, ok := r2.m.Current()
	require.True(t, ok)
	require.Equal(t, []string{"r2", "r3"}, v.Names())
	require.Equal(t, epoch2.Epoch, v.Epoch, "a live replica lost its registration: judged expired while renewing")
}

// runMembership runs m until the test ends.
func runMembership(t *testing.T, m *lease.Membership) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { require.NoError(t, m.Run(ctx)) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// viewWhere waits until m's view satisfies ok.
func viewWhere(t *testing.T, m *lease.Membership, ok func(shard.View) bool) shard.View {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		v, changed, synced := m.Current()
		if synced && ok(v) {
			return v
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("view not reached; last %+v", v)
		}
	}
}

func heldBy(v shard.View, name string) shard.Set {
	for _, m := range v.Members {
		if m.Name == name {
			return m.Held
		}
	}
	return shard.Set{}
}

// TestLeaseMembershipClaims checks the compare-and-swap: of two claims from
// the same view only the first is recorded, a claim from a view older than
// the claims object conflicts, a claim under another epoch is refused, and
// a release needs no view.
func TestLeaseMembershipClaims(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	leases := e.Client.CoordinationV1().Leases(ns)
	newM := func(name string) *lease.Membership {
		m, err := lease.New(lease.Options{
			Client: leases, Group: "cas", Name: name, LeaseDuration: k8stest.LeaseDuration, Logger: k8stest.Quiet(),
		})
		require.NoError(t, err)
		runMembership(t, m)
		return m
	}
	a, b := newM("a"), newM("b")
	both := func(v shard.View) bool { return v.Epoch != 0 && len(v.Members) == 2 }
	va, vb := viewWhere(t, a, both), viewWhere(t, b, both)
	set := func(s ...int) shard.Set {
		x, err := shard.NewSet(shard.DefaultShards, s...)
		require.NoError(t, err)
		return x
	}
	ctx := t.Context()

	// Two claims from views of the same claims state: the first wins, the
	// second conflicts even though the sets are disjoint.
	require.NoError(t, a.Claim(ctx, va, set(0, 1, 2)))
	require.ErrorIs(t, b.Claim(ctx, vb, set(3, 4)), shard.ErrConflict)
	// a's own view is now older than the claims object too.
	va2 := viewWhere(t, a, func(v shard.View) bool { return heldBy(v, "a").Len() == 3 })
	require.ErrorIs(t, a.Claim(ctx, va, set(0, 1, 2, 5)), shard.ErrConflict)
	// Another epoch, or none, is refused.
	stale := va2
	stale.Epoch++
	require.ErrorIs(t, a.Claim(ctx, stale, set(7)), shard.ErrNotRegistered)
	require.ErrorIs(t, a.Release(ctx, 0, set()), shard.ErrNotRegistered)

	vb2 := viewWhere(t, b, func(v shard.View) bool { return heldBy(v, "a").Len() == 3 })
	require.NoError(t, b.Claim(ctx, vb2, set(3, 4)))
	// a releases from its old view: no condition but the epoch.
	require.NoError(t, a.Release(ctx, va2.Epoch, set(0)))
	v := viewWhere(t, b, func(v shard.View) bool { return heldBy(v, "a").Len() == 1 && heldBy(v, "b").Len() == 2 })
	require.True(t, heldBy(v, "a").Equal(set(0)))
	require.True(t, heldBy(v, "b").Equal(set(3, 4)))
	require.Greater(t, v.Revision, vb2.Revision)

	// Concurrent claims from views of the same claims object: exactly one
	// is recorded.
	va3 := viewWhere(t, a, func(v shard.View) bool { return heldBy(v, "b").Len() == 2 && heldBy(v, "a").Len() == 1 })
	vb3 := v
	var wg sync.WaitGroup
	var errA, errB error
	wg.Go(func() { errA = a.Claim(ctx, va3, set(0, 10)) })
	wg.Go(func() { errB = b.Claim(ctx, vb3, set(3, 4, 11)) })
	wg.Wait()
	require.True(t, (errA == nil) != (errB == nil), "a: %v, b: %v", errA, errB)
	for _, err := range []error{errA, errB} {
		if err != nil {
			require.ErrorIs(t, err, shard.ErrConflict)
		}
	}
	if errA != nil { // put the state back to what the checks below expect
		require.NoError(t, b.Release(ctx, vb3.Epoch, set(3, 4)))
	} else {
		require.NoError(t, a.Release(ctx, va3.Epoch, set(0)))
	}
	v = viewWhere(t, b, func(v shard.View) bool { return heldBy(v, "a").Len() == 1 && heldBy(v, "b").Len() == 2 })

	// What is on the server: a Lease per member, and the claims object.
	l, err := leases.Get(ctx, "cas.a", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "a", *l.Spec.HolderIdentity)
	require.EqualValues(t, 2, *l.Spec.LeaseDurationSeconds)
	require.Equal(t, "cas", l.Labels[lease.GroupLabel])
	c, err := leases.Get(ctx, "cas", metav1.GetOptions{})
	require.NoError(t, err)
	var claims struct {
		Members map[string]struct {
			UID  string `json:"uid"`
			Held string `json:"held"`
		} `json:"members"`
	}
	require.NoError(t, json.Unmarshal([]byte(c.Annotations[lease.ClaimsAnnotation]), &claims))
	require.Equal(t, string(l.UID), claims.Members["a"].UID)
	require.Equal(t, "0", claims.Members["a"].Held)
	require.Equal(t, "3-4", claims.Members["b"].Held)
}

// TestLeaseMembershipNameTaken: a second registration of a live name waits
// until the first one leaves, then registers holding nothing.
func TestLeaseMembershipNameTaken(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	leases := e.Client.CoordinationV1().Leases(ns)
	opts := lease.Options{Client: leases, Group: "dup", Name: "x", LeaseDuration: k8stest.LeaseDuration, Logger: k8stest.Quiet()}
	first, err := lease.New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = first.Run(ctx) })
	v1 := viewWhere(t, first, func(v shard.View) bool { return v.Epoch != 0 })

	second, err := lease.New(opts)
	require.NoError(t, err)
	runMembership(t, second)
	v := viewWhere(t, second, func(v shard.View) bool { return len(v.Members) == 1 })
	require.Zero(t, v.Epoch, "registered under a live name")

	cancel()
	wg.Wait()
	v2 := viewWhere(t, second, func(v shard.View) bool { return v.Epoch != 0 })
	require.Greater(t, v2.Epoch, v1.Epoch, "epochs are creation resourceVersions: a later registration has a larger one")
	require.True(t, time.Now().Before(second.ValidUntil(v2.Epoch)))
	require.True(t, first.ValidUntil(v1.Epoch).Before(time.Now()), "validity did not end on leaving")
}

// TestLeaseMembershipLeaseLost: a member whose Lease is deleted under it
// (as by an observer that judged it expired) ends that registration's
// validity, registers again under a new epoch and holds nothing there.
func TestLeaseMembershipLeaseLost(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	leases := e.Client.CoordinationV1().Leases(ns)
	m, err := lease.New(lease.Options{
		Client: leases, Group: "lost", Name: "x", LeaseDuration: k8stest.LeaseDuration, Logger: k8stest.Quiet(),
	})
	require.NoError(t, err)
	runMembership(t, m)
	v1 := viewWhere(t, m, func(v shard.View) bool { return v.Epoch != 0 })
	held, err := shard.NewSet(shard.DefaultShards, 1, 2)
	require.NoError(t, err)
	require.NoError(t, m.Claim(t.Context(), v1, held))
	viewWhere(t, m, func(v shard.View) bool { return heldBy(v, "x").Len() == 2 })

	require.NoError(t, leases.Delete(t.Context(), "lost.x", metav1.DeleteOptions{}))
	v2 := viewWhere(t, m, func(v shard.View) bool { return v.Epoch != 0 && v.Epoch != v1.Epoch })
	require.True(t, m.ValidUntil(v1.Epoch).IsZero(), "the lost registration still counts as valid")
	require.True(t, time.Now().Before(m.ValidUntil(v2.Epoch)))
	// The old record is there until the new registration rewrites it;
	// claims under the old epoch are refused.
	require.ErrorIs(t, m.Claim(t.Context(), v1, held), shard.ErrNotRegistered)
	require.NoError(t, m.Release(t.Context(), v2.Epoch, shard.Set{}))
	viewWhere(t, m, func(v shard.View) bool { return heldBy(v, "x").Empty() })
}

func TestLeaseMembershipOptions(t *testing.T) {
	fakeLeases := func() coordinationv1client.LeaseInterface {
		return fake.NewClientset().CoordinationV1().Leases("default")
	}
	long := strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("a", 61) // 253
	for name, o := range map[string]lease.Options{
		"no client":   {Group: "g", Name: "a"},
		"no group":    {Client: fakeLeases(), Name: "a"},
		"group dot":   {Client: fakeLeases(), Group: "g.h", Name: "a"},
		"bad name":    {Client: fakeLeases(), Group: "g", Name: "A_b"},
		"negative":    {Client: fakeLeases(), Group: "g", Name: "a", LeaseDuration: -1},
		"drift":       {Client: fakeLeases(), Group: "g", Name: "a", MaxClockDrift: 0.5},
		"name length": {Client: fakeLeases(), Group: "g", Name: long},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := lease.New(o)
			require.ErrorIs(t, err, informer.ErrInvalidOptions)
		})
	}
	m, err := lease.New(lease.Options{Client: fakeLeases(), Group: "g", Name: "pod-0.x"})
	require.NoError(t, err)
	require.Equal(t, "pod-0.x", m.Name())
	_, _, ok := m.Current()
	require.False(t, ok, "a view before Run")
	require.True(t, m.ValidUntil(0).IsZero())
}

// TestLeasePreconditions pins what the observers' rule relies on: the
// apiserver refuses a delete conditioned on a resourceVersion the Lease has
// moved past (a renewal the observer had not seen), and an update
// conditioned on an older resourceVersion.
func TestLeasePreconditions(t *testing.T) {
	e := needEnv(t)
	leases := e.Client.CoordinationV1().Leases(e.Namespace(t))
	ctx := t.Context()
	holder, secs := "m", int32(1)
	l, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "p.m"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	seen := l.ResourceVersion
	now := metav1.NewMicroTime(time.Now())
	l.Spec.RenewTime = &now
	renewed, err := leases.Update(ctx, l, metav1.UpdateOptions{})
	require.NoError(t, err)

	_, err = leases.Update(ctx, l, metav1.UpdateOptions{}) // l still carries the old version
	require.True(t, apierrors.IsConflict(err), "update at an old resourceVersion: %v", err)
	err = leases.Delete(ctx, "p.m", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &l.UID, ResourceVersion: &seen}})
	require.True(t, apierrors.IsConflict(err), "delete at an old resourceVersion: %v", err)
	other := types.UID("another-incarnation")
	err = leases.Delete(ctx, "p.m", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &other}})
	require.True(t, apierrors.IsConflict(err), "delete of another UID: %v", err)
	require.NoError(t, leases.Delete(ctx, "p.m", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &l.UID, ResourceVersion: &renewed.ResourceVersion}}))
}
