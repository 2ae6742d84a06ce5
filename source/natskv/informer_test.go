package natskv_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/natskv"
	"github.com/ginformer/ginformer/source/natskv/natstest"
)

type object = *natskv.Object[obj]

// model is what a handler saw: the generation of each key after every
// add, update and delete it was told of.
type model struct {
	mu      sync.Mutex
	gens    map[string]int
	deletes int
	changed chan struct{} // signalled (buffered, 1) after each change
}

func newModel() *model { return &model{gens: map[string]int{}, changed: make(chan struct{}, 1)} }

// signal notes a change; called with mu held.
func (m *model) signalLocked() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

func (m *model) handler() informer.HandlerFuncs[string, object] {
	return informer.HandlerFuncs[string, object]{
		AddFunc: func(o object, _ bool) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.gens[o.Key] = o.Value.Gen
			m.signalLocked()
		},
		UpdateFunc: func(_, o object) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.gens[o.Key] = o.Value.Gen
			m.signalLocked()
		},
		DeleteFunc: func(d informer.Deletion[string, object]) {
			m.mu.Lock()
			defer m.mu.Unlock()
			delete(m.gens, d.Key)
			m.deletes++
			m.signalLocked()
		},
	}
}

func (m *model) snapshot() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.gens))
	for k, g := range m.gens {
		out[k] = g
	}
	return out
}

// startInformer runs an informer over src with a model handler until the
// test ends, and waits for its sync. mods change its options.
func startInformer(t *testing.T, src *natskv.Source[obj], mods ...func(*informer.Options[string, object])) (*informer.SharedInformer[string, object], *model) {
	t.Helper()
	opts := informer.Options[string, object]{Name: "natskv", Source: src, KeyFunc: natskv.KeyFunc[obj]}
	for _, mod := range mods {
		mod(&opts)
	}
	inf, err := informer.NewSharedInformer(opts)
	require.NoError(t, err)
	m := newModel()
	reg, err := inf.AddHandler(m.handler(), informer.HandlerOptions{Name: "model"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	require.NoError(t, informer.WaitForSync(t.Context(), inf, reg))
	return inf, m
}

// bucketState reads the generation of every key of the bucket and the
// stream's last revision.
func bucketState(t *testing.T, ctx context.Context, w writer) (map[string]int, string) {
	t.Helper()
	st, err := w.js.Stream(ctx, "KV_"+w.kv.Bucket())
	require.NoError(t, err)
	last := st.CachedInfo().State.LastSeq
	state := map[string]int{}
	lister, err := w.kv.ListKeys(ctx)
	require.NoError(t, err)
	for k := range lister.Keys() {
		o, _, err := w.get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		require.NoError(t, err)
		state[k] = o.Gen
	}
	_ = lister.Stop()
	return state, fmt.Sprint(last)
}

// requireConverged waits for the informer to reach the bucket's last
// revision and checks that its cache and the handler's model equal the
// bucket.
func requireConverged(t *testing.T, w writer, inf *informer.SharedInformer[string, object], m *model) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	want, last := bucketState(t, ctx, w)
	require.NoError(t, inf.WaitForVersion(ctx, last), "informer at revision %s", last)
	cache := map[string]int{}
	for k, o := range inf.Lister().All() {
		cache[k] = o.Value.Gen
	}
	require.Equal(t, want, cache, "cache at revision %s", last)
	// The handlers run after the cache is updated: wait for the model.
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	for {
		got := m.snapshot()
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		select {
		case <-m.changed:
		case <-timer.C:
			require.Equal(t, want, got, "handler model at revision %s", last)
			return
		}
	}
}

// churn writes n random puts, updates, deletes and purges over keys k0..k19.
func churn(t *testing.T, ctx context.Context, w writer, rng *rand.Rand, n int) {
	t.Helper()
	for range n {
		key := fmt.Sprintf("k%d", rng.IntN(20))
		var err error
		switch r := rng.IntN(10); {
		case r < 6:
			b, _ := json.Marshal(obj{Name: key, Gen: rng.IntN(1000) + 1})
			_, err = w.kv.Put(ctx, key, b)
		case r < 8:
			_, err = natstest.Delete(ctx, w.js, w.kv.Bucket(), key)
		default:
			_, err = natstest.Purge(ctx, w.js, w.kv.Bucket(), key)
		}
		require.NoError(t, err)
	}
}

// An informer over the source: writes, deletes and purges (also of keys
// already deleted), with the default history of one revision per key as well
// as a longer one; the cache and the handlers end equal to the bucket.
func TestInformerConverges(t *testing.T) {
	for _, history := range []uint8{1, 8} {
		t.Run(fmt.Sprintf("history%d", history), func(t *testing.T) {
			_, js := conn(t, srv)
			w := writer{js: js, kv: newBucket(t, js, jetstream.KeyValueConfig{History: history})}
			src := newSource(t, natskv.Options[obj]{JetStream: js, Bucket: w.kv.Bucket()})
			ctx := t.Context()
			rng := rand.New(rand.NewPCG(uint64(history), 2))
			churn(t, ctx, w, rng, 50) // before the informer: the initial list
			inf, m := startInformer(t, src)
			churn(t, ctx, w, rng, 500)
			requireConverged(t, w, inf, m)
			m.mu.Lock()
			require.Positive(t, m.deletes)
			m.mu.Unlock()
		})
	}
}
