package informer_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// noteLog records what a handler receives, in order, one line per call.
type noteLog struct {
	mu    sync.Mutex
	lines []string
}

func (n *noteLog) add(format string, args ...any) {
	n.mu.Lock()
	n.lines = append(n.lines, fmt.Sprintf(format, args...))
	n.mu.Unlock()
}

func (n *noteLog) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.lines)
}

func (n *noteLog) handler() informer.HandlerFuncs[string, *snapItem] {
	return informer.HandlerFuncs[string, *snapItem]{
		AddFunc: func(it *snapItem, initial bool) { n.add("add %s=%d initial=%v", it.Name, it.Val, initial) },
		UpdateFunc: func(old, it *snapItem) {
			n.add("update %s=%d", it.Name, it.Val)
		},
		DeleteFunc: func(d informer.Deletion[string, *snapItem]) { n.add("delete %s", d.Key) },
	}
}

// runSnap is one run of an informer over src with a snapshot at path.
type runSnap struct {
	inf    *informer.SharedInformer[string, *snapItem]
	reg    *informer.Registration[string, *snapItem]
	notes  *noteLog
	errs   *noteLog
	cancel context.CancelFunc
	done   chan error
}

func startSnap(t *testing.T, src *histSource, opts informer.Options[string, *snapItem]) *runSnap {
	t.Helper()
	r := &runSnap{notes: &noteLog{}, errs: &noteLog{}, done: make(chan error, 1)}
	opts.Source, opts.KeyFunc = src, snapKey
	opts.ErrorHandler = func(_ context.Context, err error) { r.errs.add("%v", err) }
	opts.Logger = logr.FromSlogHandler(slog.DiscardHandler)
	inf, err := informer.NewSharedInformer(opts)
	require.NoError(t, err)
	r.inf = inf
	r.reg, err = inf.AddHandler(r.notes.handler(), informer.HandlerOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- inf.Run(ctx) }()
	t.Cleanup(r.stop)
	return r
}

// stop stops the informer and waits for Run (and its final snapshot).
func (r *runSnap) stop() {
	r.cancel()
	<-r.done
	r.done <- nil // a second stop returns at once
}

func (r *runSnap) waitSynced(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, informer.WaitForSync(ctx, r.inf, r.reg))
}

// cache returns the informer's cache by name.
func (r *runSnap) cache() map[string]snapItem {
	m := map[string]snapItem{}
	for k, v := range r.inf.Lister().All() {
		m[k] = *v
	}
	return m
}

func snapOpts(path string) informer.Options[string, *snapItem] {
	return informer.Options[string, *snapItem]{Snapshot: informer.SnapshotOptions[*snapItem]{Store: informer.NewSnapshotFile(path), Interval: -1}}
}

// TestWarmRestartCatchesUpWithoutListing: an informer stopped with a
// snapshot restarts from it: the restored cache catches up with the
// changes made while it was down through a watch from the snapshot's
// version, without any list, and its handler receives exactly what a cold
// start would deliver: the caught-up state as initial adds. A key deleted
// while it was down never reaches the handler.
func TestWarmRestartCatchesUpWithoutListing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	src := newHistSource()
	for i := range 5 {
		src.put(fmt.Sprintf("k%d", i), i)
	}
	first := startSnap(t, src, snapOpts(path))
	first.waitSynced(t)
	src.put("k1", 10)
	require.NoError(t, first.inf.WaitForVersion(context.Background(), "6"))
	first.stop()
	h := first.inf.Health()
	assert.Equal(t, "6", h.SnapshotVersion, "written when it stopped")
	assert.Positive(t, h.SnapshotBytes)
	lists, _ := src.calls()
	require.Equal(t, 1, lists)

	// While it is down: an update, a delete, an add, and a key added and
	// deleted again.
	src.put("k2", 20)
	src.del("k3")
	src.put("k9", 9)
	src.put("gone", 1)
	src.del("gone")

	second := startSnap(t, src, snapOpts(path))
	second.waitSynced(t)
	assert.Equal(t, src.state(), second.cache())
	lists, watches := src.calls()
	assert.Equal(t, 1, lists, "no list: the restart resumed")
	require.NotEmpty(t, watches)
	assert.Equal(t, informer.WatchOptions{Version: "6", NotifyCaughtUp: true}, stripTimeout(watches[len(watches)-1]))

	notes := second.notes.all()
	slices.Sort(notes)
	assert.Equal(t, []string{
		"add k0=0 initial=true", "add k1=10 initial=true", "add k2=20 initial=true",
		"add k4=4 initial=true", "add k9=9 initial=true",
	}, notes, "the caught-up state as initial adds, and nothing else")
	h = second.inf.Health()
	assert.False(t, h.Restored)
	assert.Equal(t, "6", h.RestoredVersion)
	assert.Equal(t, informer.StartResumed, h.Start)
	assert.Equal(t, informer.StartCold, first.inf.Health().Start)
	assert.Empty(t, second.errs.all())

	// Then every later change, as usual.
	src.del("k0")
	src.put("k4", 40)
	require.Eventually(t, func() bool { return len(second.notes.all()) == 7 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, []string{"delete k0", "update k4=40"}, second.notes.all()[5:])
}

func stripTimeout(o informer.WatchOptions) informer.WatchOptions {
	o.Timeout = 0
	return o
}

// TestWarmRestartHandlersWaitForCatchUp: while the restored cache catches
// up, readers see the restored state and Health says so, handlers (added
// before Run or during the catch-up) receive nothing; at the end each
// receives the caught-up state.
func TestWarmRestartHandlersWaitForCatchUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	src := newHistSource()
	src.put("a", 1)
	src.put("b", 2)
	first := startSnap(t, src, snapOpts(path))
	first.waitSynced(t)
	first.stop()
	src.del("a")
	src.put("c", 3)

	src.mode = caughtUpHeld
	second := startSnap(t, src, snapOpts(path))
	require.Eventually(t, func() bool { return second.inf.LastSyncVersion() == "4" }, 10*time.Second, time.Millisecond)
	require.NoError(t, second.inf.WaitForVersion(context.Background(), "4"))
	late := &noteLog{}
	lateReg, err := second.inf.AddHandler(late.handler(), informer.HandlerOptions{})
	require.NoError(t, err)
	removed, err := second.inf.AddHandler(informer.HandlerFuncs[string, *snapItem]{
		AddFunc: func(it *snapItem, _ bool) { t.Errorf("a handler removed while it waited received %v", it.Name) },
	}, informer.HandlerOptions{Name: "removed"})
	require.NoError(t, err)
	removed.Remove() // while it waits: its goroutine exits, and it is never told anything
	select {
	case <-removed.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a handler removed while it waited did not exit")
	}
	h := second.inf.Health()
	assert.True(t, h.Restored)
	assert.False(t, h.Synced)
	assert.Len(t, h.Handlers, 2, "waiting handlers are registered handlers")
	assert.Equal(t, "2", h.RestoredVersion)
	assert.Equal(t, map[string]snapItem{"b": {Name: "b", Val: 2, Ver: 2}, "c": {Name: "c", Val: 3, Ver: 4}}, second.cache(),
		"readers see the cache as it catches up")
	assert.Empty(t, second.notes.all())
	assert.Empty(t, late.all())

	close(src.release)
	second.waitSynced(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, informer.WaitForSync(ctx, lateReg))
	for _, n := range []*noteLog{second.notes, late} {
		got := n.all()
		slices.Sort(got)
		assert.Equal(t, []string{"add b=2 initial=true", "add c=3 initial=true"}, got)
	}
	h = second.inf.Health()
	assert.False(t, h.Restored)
	assert.Len(t, h.Handlers, 2)
}

// TestWarmRestartRelistsWhenExpired: the snapshot's version was compacted
// while the informer was down: it relists, and its handler still receives
// the current state as initial adds, the deleted key never.
func TestWarmRestartRelistsWhenExpired(t *testing.T) {
	for _, tt := range []struct {
		name string
		prep func(*histSource)
	}{
		{"compacted", func(s *histSource) { s.compact() }},
		{"unsupported", func(s *histSource) { s.mode = caughtUpUnsupported }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "snap")
			src := newHistSource()
			src.put("a", 1)
			src.put("b", 2)
			first := startSnap(t, src, snapOpts(path))
			first.waitSynced(t)
			first.stop()
			src.del("a")
			src.put("b", 20)
			src.put("c", 3)
			tt.prep(src)

			second := startSnap(t, src, snapOpts(path))
			second.waitSynced(t)
			assert.Equal(t, src.state(), second.cache())
			lists, _ := src.calls()
			assert.Equal(t, 2, lists, "one cold list, one relist")
			got := second.notes.all()
			slices.Sort(got)
			assert.Equal(t, []string{"add b=20 initial=true", "add c=3 initial=true"}, got)
			if tt.name == "unsupported" {
				assert.Empty(t, second.errs.all(), "a source that cannot resume is no error")
			}
			h := second.inf.Health()
			assert.Equal(t, informer.StartRelisted, h.Start)
			assert.NotEmpty(t, h.StartReason)
		})
	}
}

// TestWarmRestartWithoutMarkerRelists: a source that ignores
// NotifyCaughtUp (one written before it existed) does not keep the
// informer from syncing: it relists once the marker is overdue.
func TestWarmRestartWithoutMarkerRelists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	src := newHistSource()
	src.put("a", 1)
	first := startSnap(t, src, snapOpts(path))
	first.waitSynced(t)
	first.stop()
	src.put("b", 2)
	src.mode = caughtUpIgnored
	opts := snapOpts(path)
	opts.ListWatch.StreamingListTimeout = 100 * time.Millisecond
	second := startSnap(t, src, opts)
	second.waitSynced(t)
	assert.Equal(t, src.state(), second.cache())
	lists, _ := src.calls()
	assert.Equal(t, 2, lists)
}

// TestWarmRestartRefusesBadSnapshots: a snapshot of something else, or a
// damaged one, is refused with an ErrSnapshot error and the informer starts
// cold, correctly.
func TestWarmRestartRefusesBadSnapshots(t *testing.T) {
	for _, tt := range []struct {
		name  string
		spoil func(t *testing.T, path string, src *histSource, opts *informer.Options[string, *snapItem])
		want  string
	}{
		{"other source", func(_ *testing.T, _ string, src *histSource, _ *informer.Options[string, *snapItem]) {
			src.identity = "hist of another prefix"
		}, `it has "source: hist" where this informer has "source: hist of another prefix"`},
		{"other user identity", func(_ *testing.T, _ string, _ *histSource, o *informer.Options[string, *snapItem]) {
			o.Snapshot.Identity = "transform v2"
		}, `where this informer has "user: transform v2"`},
		{"truncated", func(t *testing.T, path string, _ *histSource, _ *informer.Options[string, *snapItem]) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, b[:len(b)-5], 0o600))
		}, "truncated or damaged"},
		{"bit flipped", func(t *testing.T, path string, _ *histSource, _ *informer.Options[string, *snapItem]) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			b[len(b)/2] ^= 0x10
			require.NoError(t, os.WriteFile(path, b, 0o600))
		}, "truncated or damaged"},
		{"not a snapshot", func(t *testing.T, path string, _ *histSource, _ *informer.Options[string, *snapItem]) {
			require.NoError(t, os.WriteFile(path, []byte("hello"), 0o600))
		}, "no snapshot header"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "snap")
			src := newHistSource()
			src.put("a", 1)
			src.put("b", 2)
			first := startSnap(t, src, snapOpts(path))
			first.waitSynced(t)
			first.stop()
			src.del("a")

			opts := snapOpts(path)
			tt.spoil(t, path, src, &opts)
			second := startSnap(t, src, opts)
			second.waitSynced(t)
			assert.Equal(t, src.state(), second.cache())
			assert.Equal(t, []string{"add b=2 initial=true"}, second.notes.all())
			errs := second.errs.all()
			require.Len(t, errs, 1)
			assert.Contains(t, errs[0], "starting cold")
			assert.Contains(t, errs[0], tt.want)
			lists, _ := src.calls()
			assert.Equal(t, 2, lists, "a cold start lists")
			h := second.inf.Health()
			assert.ErrorIs(t, h.LastError, informer.ErrSnapshot)
			assert.Equal(t, informer.StartRefused, h.Start, "how the start went stays in Health")
			assert.Contains(t, h.StartReason, tt.want)
		})
	}
}

// TestWarmRestartWritesPeriodically: with an interval, snapshots are written
// while the informer runs, and one restored after a crash (no snapshot at
// stop) catches up from its version.
func TestWarmRestartWritesPeriodically(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	src := newHistSource()
	src.put("a", 1)
	opts := snapOpts(path)
	opts.Snapshot.Interval = 10 * time.Millisecond
	first := startSnap(t, src, opts)
	first.waitSynced(t)
	require.Eventually(t, func() bool { return first.inf.Health().SnapshotVersion == "1" }, 10*time.Second, time.Millisecond)
	src.put("b", 2)
	require.Eventually(t, func() bool { return first.inf.Health().SnapshotVersion == "2" }, 10*time.Second, time.Millisecond)
	// A crash: copy the file as it is now, then stop.
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	first.stop()
	require.NoError(t, os.WriteFile(path, b, 0o600))
	src.put("a", 10)

	second := startSnap(t, src, snapOpts(path))
	second.waitSynced(t)
	assert.Equal(t, src.state(), second.cache())
	assert.Equal(t, "2", second.inf.Health().RestoredVersion)
	lists, _ := src.calls()
	assert.Equal(t, 1, lists)
}

// TestSnapshotCodecDefault: a source that is no SnapshotSource gets the
// ValueCodec of its type; a type the ValueCodec cannot plan needs
// Snapshot.Codec.
func TestSnapshotCodecDefault(t *testing.T) {
	empty := func(context.Context, informer.ListOptions) (informer.ListPage[*snapItem], error) {
		return informer.ListPage[*snapItem]{}, nil
	}
	src := informer.SourceFuncs[*snapItem]{
		ListFunc:  empty,
		WatchFunc: func(context.Context, informer.WatchOptions) (informer.Watcher[*snapItem], error) { return nil, nil },
	}
	opts := informer.Options[string, *snapItem]{Source: src, KeyFunc: snapKey,
		Snapshot: informer.SnapshotOptions[*snapItem]{Store: informer.NewSnapshotFile(filepath.Join(t.TempDir(), "s"))}}
	_, err := informer.NewSharedInformer(opts)
	require.NoError(t, err, "the ValueCodec of *snapItem")

	type withAny struct{ V any }
	anySrc := informer.SourceFuncs[*withAny]{
		ListFunc: func(context.Context, informer.ListOptions) (informer.ListPage[*withAny], error) {
			return informer.ListPage[*withAny]{}, nil
		},
		WatchFunc: func(context.Context, informer.WatchOptions) (informer.Watcher[*withAny], error) { return nil, nil },
	}
	anyOpts := informer.Options[string, *withAny]{Source: anySrc, KeyFunc: func(*withAny) (string, error) { return "", nil },
		Snapshot: informer.SnapshotOptions[*withAny]{Store: informer.NewSnapshotFile(filepath.Join(t.TempDir(), "s"))}}
	_, err = informer.NewSharedInformer(anyOpts)
	require.ErrorIs(t, err, informer.ErrInvalidOptions)
	assert.Contains(t, err.Error(), "set Snapshot.Codec")
	anyOpts.Snapshot.Codec = informer.JSONCodec[*withAny]{}
	_, err = informer.NewSharedInformer(anyOpts)
	require.NoError(t, err)
}

// TestValueCodecRoundTrip: every field, unexported ones included.
func TestValueCodecRoundTrip(t *testing.T) {
	type obj struct {
		Name   string
		Labels map[string]string
		When   time.Time
		hidden []int
	}
	c, err := informer.NewValueCodec[*obj]()
	require.NoError(t, err)
	assert.Contains(t, c.Format(), "Name string;Labels map[string]string;When binary(time.Time);hidden []int;")
	in := &obj{Name: "a", Labels: map[string]string{"x": "y"}, When: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), hidden: []int{1, -2}}
	b, err := c.AppendEncode([]byte("pre"), in)
	require.NoError(t, err)
	out, err := c.Decode(b[3:])
	require.NoError(t, err)
	clear(b)
	assert.Equal(t, in, out)
}

// TestSnapshotOptionsCheckedAtConstruction: a snapshot path that names no
// file is refused by NewSharedInformer, not at the first write.
func TestSnapshotOptionsCheckedAtConstruction(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{"", dir, dir + string(os.PathSeparator)} {
		opts := informer.Options[string, *snapItem]{Source: newHistSource(), KeyFunc: snapKey,
			Snapshot: informer.SnapshotOptions[*snapItem]{Store: informer.NewSnapshotFile(path)}}
		_, err := informer.NewSharedInformer(opts)
		require.ErrorIs(t, err, informer.ErrInvalidOptions, "path %q", path)
		assert.Contains(t, err.Error(), "NewSnapshotFile")
	}
}
