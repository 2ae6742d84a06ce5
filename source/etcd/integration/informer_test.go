package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

type val struct {
	Gen int `json:"gen"`
}

type obj = *etcd.Object[val]

// rig is an embedded etcd, a proxy in front of it, a client through the
// proxy for the informer and a direct one for writes.
type rig struct {
	srv    *etcdtest.Server
	proxy  *etcdtest.Proxy
	direct *clientv3.Client
	src    *etcd.Source[val]
	inf    *informer.SharedInformer[string, obj]

	mu      sync.Mutex
	deletes []informer.Deletion[string, obj]
}

func newRig(t *testing.T) *rig {
	r := &rig{srv: etcdtest.New(t, etcdtest.Config{})}
	var err error
	r.proxy, err = etcdtest.NewProxy(r.srv.Etcd().Clients[0].Addr().String())
	require.NoError(t, err)
	t.Cleanup(r.proxy.Close)
	viaProxy, err := etcdtest.NewClient(r.proxy.Endpoint())
	require.NoError(t, err)
	t.Cleanup(func() { _ = viaProxy.Close() })
	r.direct = r.srv.NewTestClient(t)
	r.src, err = etcd.New(etcd.Options[val]{Client: viaProxy, Prefix: "/it/", StripPrefix: true,
		LivenessInterval: 300 * time.Millisecond, LivenessTimeout: time.Second})
	require.NoError(t, err)
	r.inf, err = informer.NewSharedInformer(informer.Options[string, obj]{
		Source: r.src, KeyFunc: etcd.KeyFunc[val],
	})
	require.NoError(t, err)
	_, err = r.inf.AddHandler(informer.HandlerFuncs[string, obj]{
		DeleteFunc: func(d informer.Deletion[string, obj]) {
			r.mu.Lock()
			r.deletes = append(r.deletes, d)
			r.mu.Unlock()
		},
	}, informer.HandlerOptions{Name: "deletes"})
	require.NoError(t, err)
	return r
}

func (r *rig) run(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.inf.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	require.NoError(t, informer.WaitForSync(t.Context(), r.inf))
}

func (r *rig) put(t *testing.T, key string, gen int) {
	b, _ := json.Marshal(val{Gen: gen})
	_, err := r.direct.Put(t.Context(), "/it/"+key, string(b))
	require.NoError(t, err)
}

// waitCache waits until cond holds on the cache.
func (r *rig) waitCache(t *testing.T, timeout time.Duration, what string, cond func(informer.Lister[string, obj]) bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond(r.inf.Lister()) {
		if time.Now().After(deadline) {
			t.Fatalf("cache: %s not reached within %v (%d objects)", what, timeout, r.inf.Lister().Len())
		}
		time.Sleep(20 * time.Millisecond) // polling the cache of a separate pipeline
	}
}

func gen(l informer.Lister[string, obj], key string) int {
	o, ok := l.Get(key)
	if !ok {
		return 0
	}
	return o.Value.Gen
}

// Compaction during a disconnected period: the informer's watch resumes
// from a compacted revision, gets ErrExpired, relists, and the keys deleted
// meanwhile arrive as tombstones (FinalStateUnknown).
func TestCompactionWhileDisconnected(t *testing.T) {
	r := newRig(t)
	for i := range 10 {
		r.put(t, fmt.Sprintf("k%d", i), 1)
	}
	r.run(t)
	require.Equal(t, 10, r.inf.Lister().Len())

	r.proxy.SetRefuse(true)
	for i := range 5 {
		_, err := r.direct.Delete(t.Context(), fmt.Sprintf("/it/k%d", i))
		require.NoError(t, err)
	}
	r.put(t, "k5", 2)
	_, err := etcdtest.Compact(t.Context(), r.direct)
	require.NoError(t, err)
	r.proxy.SetRefuse(false)

	r.waitCache(t, 30*time.Second, "relist", func(l informer.Lister[string, obj]) bool {
		return l.Len() == 5 && gen(l, "k5") == 2
	})
	r.waitCache(t, 10*time.Second, "tombstones", func(informer.Lister[string, obj]) bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.deletes) == 5
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.deletes {
		require.True(t, d.FinalStateUnknown, "deletion of %s", d.Key)
		require.Equal(t, 1, d.Object.Value.Gen)
	}
}

// A half-open connection: the watch fails within seconds, the informer
// re-watches from its last revision on a fresh connection (the watch's
// own, not waiting for gRPC keepalive to drop the dead one) and catches up
// without a relist.
func TestHalfOpenRecovers(t *testing.T) {
	r := newRig(t)
	r.put(t, "a", 1)
	r.run(t)
	r.proxy.Blackhole()
	r.put(t, "a", 2)
	r.put(t, "b", 1)
	start := time.Now()
	r.waitCache(t, 40*time.Second, "writes after the blackhole", func(l informer.Lister[string, obj]) bool {
		return gen(l, "a") == 2 && gen(l, "b") == 1
	})
	t.Logf("recovered %v after the flow was dropped", time.Since(start))
}
