package k8s_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/source/k8s"
)

// testLeaseDuration is the members' lease duration in the tests: the shortest
// the API allows is 1 s, renewed every 333 ms, which a loaded machine
// under -race misses now and then.
const testLeaseDuration = 2 * time.Second

func leaseQuiet() logr.Logger { return logr.FromSlogHandler(slog.DiscardHandler) }

// leaseNet is a replica's network: its client dials through it, and Cut
// closes every connection and refuses new ones, as a partition would (the
// replica's process keeps running).
type leaseNet struct {
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

var errLeaseCut = errors.New("test: network cut")

func (n *leaseNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cut {
		return nil, errLeaseCut
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err == nil {
		n.conns = append(n.conns, c)
	}
	return c, err
}

func (n *leaseNet) Cut() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut = true
	for _, c := range n.conns {
		_ = c.Close()
	}
	n.conns = nil
}

// leaseClient returns a clientset with connections of its own (a custom
// dialer keeps client-go from sharing a cached transport) through n.
func leaseClient(t testing.TB, n *leaseNet) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Dial = n.dial
	c, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return c
}

// leaseOwnership records, on one clock, when each replica owned each shard (from
// the owners' OnChange reports) and when a sampler saw Owns(key) true.
type leaseOwnership struct {
	mu        sync.Mutex
	open      map[string]map[int]time.Time // replica → shard → start
	intervals map[int][]leaseInterval      // shard → closed intervals
	samples   []leaseSample
	changed   chan struct{} // closed and replaced on every report
}

type leaseInterval struct {
	replica    string
	start, end time.Time
}

// leaseSample: Owns(key) was true at some instant in [before, after].
type leaseSample struct {
	replica       string
	shard         int
	before, after time.Time
}

func newLeaseOwnership() *leaseOwnership {
	return &leaseOwnership{open: map[string]map[int]time.Time{}, intervals: map[int][]leaseInterval{}, changed: make(chan struct{})}
}

func (o *leaseOwnership) onChange(replica string) func(shard.OwnershipChange) {
	return func(c shard.OwnershipChange) {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.open[replica] == nil {
			o.open[replica] = map[int]time.Time{}
		}
		for s := range c.Released.All() {
			if start, ok := o.open[replica][s]; ok {
				o.intervals[s] = append(o.intervals[s], leaseInterval{replica, start, c.At})
				delete(o.open[replica], s)
			}
		}
		for s := range c.Acquired.All() {
			o.open[replica][s] = c.At
		}
		close(o.changed)
		o.changed = make(chan struct{})
	}
}

func (o *leaseOwnership) wait() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changed
}

// waitFor waits until cond returns nil, checking it on every leaseOwnership
// change, at most timeout; it returns how long that took.
func (o *leaseOwnership) waitFor(t *testing.T, timeout time.Duration, cond func() error) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		ch := o.wait()
		err := cond()
		if err == nil {
			return time.Since(start)
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("not settled after %v: %v", timeout, err)
		}
	}
}

// check: the intervals of different replicas on one shard never overlap,
// and every sample lies in its own replica's interval.
func (o *leaseOwnership) check(t *testing.T) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	all := map[int][]leaseInterval{}
	for s, ivs := range o.intervals {
		all[s] = slices.Clone(ivs)
	}
	now := time.Now()
	for r, open := range o.open {
		for s, start := range open {
			all[s] = append(all[s], leaseInterval{r, start, now})
		}
	}
	handoffs := 0
	for s, ivs := range all {
		slices.SortFunc(ivs, func(a, b leaseInterval) int { return a.start.Compare(b.start) })
		for i := 1; i < len(ivs); i++ {
			require.False(t, ivs[i].start.Before(ivs[i-1].end),
				"shard %d owned by %s until %v and by %s from %v", s, ivs[i-1].replica,
				ivs[i-1].end.Format(time.StampMicro), ivs[i].replica, ivs[i].start.Format(time.StampMicro))
			if ivs[i].replica != ivs[i-1].replica {
				handoffs++
			}
		}
	}
	for _, sm := range o.samples {
		in := false
		for _, iv := range all[sm.shard] {
			if iv.replica == sm.replica && !sm.after.Before(iv.start) && !sm.before.After(iv.end) {
				in = true
				break
			}
		}
		require.True(t, in, "%s saw Owns true for shard %d in [%v, %v], outside its leaseOwnership", sm.replica, sm.shard,
			sm.before.Format(time.StampMicro), sm.after.Format(time.StampMicro))
	}
	t.Logf("ownership: %d handoffs between replicas, %d Owns samples, no overlap", handoffs, len(o.samples))
}

// leaseKeys returns one key per shard of the default space.
func leaseKeys() []string {
	keys := make([]string, shard.DefaultShards)
	found := 0
	for i := 0; found < len(keys); i++ {
		k := "key-" + strconv.Itoa(i)
		if s := shard.ShardOf(shard.HashKey(k), shard.DefaultShards); keys[s] == "" {
			keys[s] = k
			found++
		}
	}
	return keys
}

// leaseReplica is a LeaseMembership and an Owner with a client and a
// network of their own, and a sampler calling Owns on one key per shard
// every few milliseconds, as handlers would.
type leaseReplica struct {
	name   string
	net    *leaseNet
	m      *k8s.LeaseMembership
	owner  *shard.Owner
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

func startLeaseReplica(t *testing.T, ns, group, name string, rec *leaseOwnership) *leaseReplica {
	t.Helper()
	r := &leaseReplica{name: name, net: &leaseNet{}}
	var err error
	r.m, err = k8s.NewLeaseMembership(k8s.LeaseMembershipOptions{
		Client: leaseClient(t, r.net).CoordinationV1().Leases(ns), Group: group, Name: name,
		LeaseDuration: testLeaseDuration, Logger: leaseQuiet(),
	})
	require.NoError(t, err)
	r.owner, err = shard.NewOwner(shard.OwnerOptions{
		Membership: r.m, OnChange: rec.onChange(name), RetryInterval: 100 * time.Millisecond, Logger: leaseQuiet(),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.wg.Go(func() { _ = r.owner.Run(ctx) })
	keys := leaseKeys()
	r.wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			for s, k := range keys {
				before := time.Now()
				if r.owner.Owns(k) {
					after := time.Now()
					rec.mu.Lock()
					rec.samples = append(rec.samples, leaseSample{name, s, before, after})
					rec.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	t.Cleanup(r.stop)
	return r
}

// stop leaves gracefully: the owner stops owning, the membership deletes
// its Lease and its record.
func (r *leaseReplica) stop() {
	r.once.Do(func() {
		r.cancel()
		r.wg.Wait()
		r.net.Cut() // close the idle connections
	})
}

// settled reports whether the replicas hold exactly the assignment of their
// names: every shard held once.
func leaseSettled(rs ...*leaseReplica) error {
	var names []string
	for _, r := range rs {
		names = append(names, r.name)
	}
	a, _ := shard.Assign(0, names)
	var union shard.Set
	total := 0
	for _, r := range rs {
		held := r.owner.Held()
		if want := a.Set(r.name); !held.Equal(want) {
			return fmt.Errorf("%s holds %d shards, assigned %d", r.name, held.Len(), want.Len())
		}
		union = union.Union(held)
		total += held.Len()
	}
	if union.Len() != shard.DefaultShards || total != shard.DefaultShards {
		return fmt.Errorf("%d shards held, %d distinct, want %d once each", total, union.Len(), shard.DefaultShards)
	}
	return nil
}
