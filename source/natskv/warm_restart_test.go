package natskv_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/natskv"
)

// Warm restarts end to end against the in-process server: a program with a
// snapshot stops, the bucket changes while it is down, and the restarted
// program resumes from its snapshot (or relists, or starts cold, when it
// must); its cache ends equal to the bucket and its handler is given the
// caught-up state as initial adds, never a key deleted meanwhile.

// countedSource is the source, counting the lists, streaming lists and
// caught-up watches asked of it, and forwarding the optional interfaces the
// informer looks for.
type countedSource struct {
	src                     *natskv.Source[obj]
	lists, streams, resumes atomic.Int64
}

func (c *countedSource) List(ctx context.Context, opts informer.ListOptions) (informer.ListPage[object], error) {
	c.lists.Add(1)
	return c.src.List(ctx, opts)
}

func (c *countedSource) Watch(ctx context.Context, opts informer.WatchOptions) (informer.Watcher[object], error) {
	if opts.SendInitialEvents {
		c.streams.Add(1)
	}
	if opts.NotifyCaughtUp {
		c.resumes.Add(1)
	}
	return c.src.Watch(ctx, opts)
}

func (c *countedSource) SnapshotIdentity(ctx context.Context) (string, error) {
	return c.src.SnapshotIdentity(ctx)
}
func (c *countedSource) SnapshotCodec() informer.Codec[object]    { return c.src.SnapshotCodec() }
func (c *countedSource) CompareVersions(a, b string) (int, error) { return c.src.CompareVersions(a, b) }
func (c *countedSource) ObjectVersion(o object) string            { return c.src.ObjectVersion(o) }

// handed records what a handler is given.
type handed struct {
	mu      sync.Mutex
	present map[string]int // key → Add and Update calls
	initial int            // Add calls with initial set
	other   []string       // anything else, in order
}

func (h *handed) handler() informer.HandlerFuncs[string, object] {
	h.present = map[string]int{}
	return informer.HandlerFuncs[string, object]{
		AddFunc: func(o object, initial bool) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.present[o.Key]++
			if initial {
				h.initial++
			} else {
				h.other = append(h.other, "add "+o.Key)
			}
		},
		UpdateFunc: func(_, o object) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.present[o.Key]++
			h.other = append(h.other, "update "+o.Key)
		},
		DeleteFunc: func(d informer.Deletion[string, object]) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.other = append(h.other, "delete "+d.Key)
		},
	}
}

func (h *handed) get() (present map[string]int, initial int, other []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.present), h.initial, slices.Clone(h.other)
}

// program is one run of a program over a bucket: a source and an informer
// with a snapshot file, and a handler.
type program struct {
	src    *countedSource
	inf    *informer.SharedInformer[string, object]
	reg    *informer.Registration[string, object]
	seen   *handed
	errs   chan error // the informer's errors, buffered
	cancel context.CancelFunc
	done   chan struct{}
}

// startProgram starts a program over w's bucket that keeps its snapshot
// at path (written when it stops).
func startProgram(t *testing.T, w writer, path string) *program {
	t.Helper()
	src := newSource(t, natskv.Options[obj]{JetStream: w.js, Bucket: w.kv.Bucket(), Logger: logr.FromSlogHandler(slog.DiscardHandler)})
	p := &program{src: &countedSource{src: src}, seen: &handed{}, errs: make(chan error, 100), done: make(chan struct{})}
	var err error
	p.inf, err = informer.NewSharedInformer(informer.Options[string, object]{
		Source:  p.src,
		KeyFunc: natskv.KeyFunc[obj],
		Logger:  logr.FromSlogHandler(slog.DiscardHandler),
		ErrorHandler: func(_ context.Context, err error) {
			t.Logf("informer error: %v", err)
			select {
			case p.errs <- err:
			default:
			}
		},
		Snapshot: informer.SnapshotOptions[object]{Store: informer.NewSnapshotFile(path), Interval: -1},
	})
	require.NoError(t, err)
	p.reg, err = p.inf.AddHandler(p.seen.handler(), informer.HandlerOptions{})
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() {
		defer close(p.done)
		_ = p.inf.Run(runCtx)
	}()
	t.Cleanup(p.stop)
	ctx, cancelWait := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancelWait()
	require.NoError(t, informer.WaitForSync(ctx, p.inf, p.reg))
	return p
}

// stop stops the program and waits for Run, which writes the snapshot.
func (p *program) stop() {
	p.cancel()
	<-p.done
}

// errors returns the informer's errors so far.
func (p *program) errors() []error {
	var errs []error
	for {
		select {
		case err := <-p.errs:
			errs = append(errs, err)
		default:
			return errs
		}
	}
}

// cache returns the generation and revision of each cached key.
func (p *program) cache() map[string]string {
	m := map[string]string{}
	for k, o := range p.inf.Lister().All() {
		m[k] = fmt.Sprintf("gen %d rev %d", o.Value.Gen, o.Revision)
	}
	return m
}

// bucket returns the generation and revision of each key of the bucket.
func bucket(t *testing.T, w writer) map[string]string {
	t.Helper()
	ctx := t.Context()
	m := map[string]string{}
	keys, err := w.kv.ListKeys(ctx)
	require.NoError(t, err)
	defer func() { _ = keys.Stop() }()
	for k := range keys.Keys() {
		o, rev, err := w.get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		require.NoError(t, err)
		m[k] = fmt.Sprintf("gen %d rev %d", o.Gen, rev)
	}
	return m
}

// seed puts n keys k000.. at generation 1.
func seed(t *testing.T, w writer, n int) {
	t.Helper()
	for i := range n {
		_, err := w.create(t.Context(), fmt.Sprintf("k%03d", i))
		require.NoError(t, err)
	}
}

// requireHandedState checks that the handler was given the bucket's keys
// as initial adds, once each, nothing else, and none of deleted.
func requireHandedState(t *testing.T, p *program, want map[string]string, deleted map[string]bool) {
	t.Helper()
	present, initial, other := p.seen.get()
	assert.Equal(t, len(want), initial, "the caught-up state as initial adds")
	assert.Empty(t, other, "nothing else")
	for k := range deleted {
		assert.Zero(t, present[k], "%s, deleted while the program was down, handed as present", k)
	}
	for k := range want {
		assert.Equal(t, 1, present[k], k)
	}
}

// TestWarmRestart: while the program is down, keys are updated, deleted
// (some after an update), purged (unchanged since the snapshot), created,
// and created then deleted. Restarted, it resumes from its snapshot with a
// caught-up watch, without listing the bucket; then it follows changes as
// usual.
func TestWarmRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snapshot")
	_, js := conn(t, srv)
	w := writer{js: js, kv: newBucket(t, js, jetstream.KeyValueConfig{})}
	ctx := t.Context()
	seed(t, w, 200)

	first := startProgram(t, w, path)
	v, err := w.update(ctx, "k000")
	require.NoError(t, err)
	require.NoError(t, first.inf.WaitForVersion(ctx, v))
	first.stop()
	require.Equal(t, v, first.inf.Health().SnapshotVersion, "written as it stopped")

	deleted := map[string]bool{}
	for i := range 60 {
		name := fmt.Sprintf("k%03d", i)
		switch i % 5 {
		case 0, 1:
			_, err = w.update(ctx, name)
		case 2:
			_, err = w.update(ctx, name)
			require.NoError(t, err)
			_, err = w.del(ctx, name)
			deleted[name] = true
		case 3:
			_, err = w.del(ctx, name)
			deleted[name] = true
		case 4: // a purge removes the key's earlier messages, all before the snapshot's revision
			_, err = w.purge(ctx, name)
			deleted[name] = true
		}
		require.NoError(t, err)
	}
	for i := range 20 {
		_, err = w.create(ctx, fmt.Sprintf("new%02d", i))
		require.NoError(t, err)
	}
	_, err = w.create(ctx, "ephemeral")
	require.NoError(t, err)
	_, err = w.del(ctx, "ephemeral")
	require.NoError(t, err)
	deleted["ephemeral"] = true

	second := startProgram(t, w, path)
	want := bucket(t, w)
	require.Len(t, want, 200-36+20)
	require.Equal(t, want, second.cache(), "the cache is the bucket")
	assert.Zero(t, second.src.lists.Load(), "no list")
	assert.Zero(t, second.src.streams.Load(), "no streaming list")
	assert.Positive(t, second.src.resumes.Load(), "a watch from the snapshot")
	assert.Empty(t, second.errors(), "no error")
	requireHandedState(t, second, want, deleted)

	// Then as usual.
	_, err = w.update(ctx, "k001")
	require.NoError(t, err)
	v, err = w.del(ctx, "k005")
	require.NoError(t, err)
	require.NoError(t, second.inf.WaitForVersion(ctx, v))
	require.Eventually(t, func() bool { _, _, other := second.seen.get(); return len(other) == 2 }, 10*time.Second, time.Millisecond)
	_, _, other := second.seen.get()
	assert.Equal(t, []string{"update k001", "delete k005"}, other)
}

// TestWarmRestartRelists: a purge of a key written after the snapshot's
// revision removes messages the watch from it needed (a gap: ErrExpired),
// so the restarted program relists; the cache still ends equal to the
// bucket, and the handler sees the same as after a resume.
func TestWarmRestartRelists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snapshot")
	_, js := conn(t, srv)
	w := writer{js: js, kv: newBucket(t, js, jetstream.KeyValueConfig{})}
	ctx := t.Context()
	seed(t, w, 50)
	startProgram(t, w, path).stop()

	_, err := w.update(ctx, "k001")
	require.NoError(t, err)
	_, err = w.purge(ctx, "k001") // removes the update above
	require.NoError(t, err)
	_, err = w.del(ctx, "k002")
	require.NoError(t, err)

	second := startProgram(t, w, path)
	want := bucket(t, w)
	require.Len(t, want, 48)
	require.Equal(t, want, second.cache())
	assert.Positive(t, second.src.resumes.Load(), "tried to resume")
	assert.Positive(t, second.src.lists.Load()+second.src.streams.Load(), "then relisted")
	requireHandedState(t, second, want, map[string]bool{"k001": true, "k002": true})
}

// TestWarmRestartRecreatedBucket: the bucket is deleted and created again
// (its revisions start at 1 again) while the program is down: the snapshot
// is refused for its identity (an ErrSnapshot error), the program starts
// cold, and nothing of the old bucket reaches the cache or the handler.
func TestWarmRestartRecreatedBucket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snapshot")
	_, js := conn(t, srv)
	w := writer{js: js, kv: newBucket(t, js, jetstream.KeyValueConfig{})}
	ctx := t.Context()
	seed(t, w, 30)
	startProgram(t, w, path).stop()

	require.NoError(t, js.DeleteKeyValue(ctx, w.kv.Bucket()))
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: w.kv.Bucket(), History: jetstream.KeyValueMaxHistory})
	require.NoError(t, err)
	w.kv = kv
	for i := range 5 {
		b, _ := json.Marshal(obj{Name: "fresh", Gen: 7})
		_, err := kv.Put(ctx, fmt.Sprintf("fresh%d", i), b)
		require.NoError(t, err)
	}

	second := startProgram(t, w, path)
	want := bucket(t, w)
	require.Len(t, want, 5)
	require.Equal(t, want, second.cache())
	assert.Zero(t, second.src.resumes.Load(), "no watch from the old bucket's revision")
	assert.False(t, second.inf.Health().Restored, "a cold start")
	errs := second.errors()
	require.NotEmpty(t, errs)
	assert.ErrorIs(t, errs[0], informer.ErrSnapshot)
	present, initial, other := second.seen.get()
	assert.Equal(t, 5, initial)
	assert.Empty(t, other)
	for k := range present {
		assert.Contains(t, want, k)
	}
}
