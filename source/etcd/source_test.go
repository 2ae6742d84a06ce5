package etcd_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// next receives the next non-bookmark event within 10 s.
func next(t *testing.T, w informer.Watcher[*etcd.Object[obj]]) informer.Event[*etcd.Object[obj]] {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-w.Events():
			require.True(t, ok, "stream closed")
			if ev.Type != informer.EventBookmark {
				return ev
			}
		case <-timeout:
			t.Fatal("no event within 10s")
		}
	}
}

// watchFrom lists src and opens a watch from the list's version.
func watchFrom(t *testing.T, src *etcd.Source[obj]) informer.Watcher[*etcd.Object[obj]] {
	t.Helper()
	page, err := src.List(t.Context(), informer.ListOptions{})
	require.NoError(t, err)
	w, err := src.Watch(t.Context(), informer.WatchOptions{Version: page.Version})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	return w
}

type seen struct {
	typ     informer.EventType
	key     string
	tier    string
	unknown bool
}

func see(ev informer.Event[*etcd.Object[obj]]) seen {
	return seen{ev.Type, ev.Object.Key, ev.Object.Value.Tier, ev.Object.ValueUnknown}
}

func TestNewOptions(t *testing.T) {
	_, err := etcd.New(etcd.Options[obj]{})
	require.ErrorIs(t, err, informer.ErrInvalidOptions, "no client")
	_, err = etcd.New(etcd.Options[obj]{Client: client(t), PageSize: -1})
	require.ErrorIs(t, err, informer.ErrInvalidOptions, "negative page size")
	src, err := etcd.New(etcd.Options[obj]{Client: client(t), Prefix: "/p/"})
	require.NoError(t, err)
	require.Equal(t, "/p/", src.Prefix())
	require.Zero(t, src.DecodeErrors())
}

// A filter turns modifications into additions and deletions as objects
// enter and leave it, in the watch and in the list.
func TestFilterEnterLeave(t *testing.T) {
	w := writer{c: client(t), prefix: newPrefix(t)}
	src := newSource(t, etcd.Options[obj]{Client: w.c, Prefix: w.prefix, StripPrefix: true,
		Filter: func(_ string, o obj) bool { return o.Tier == "gold" }})
	ctx := t.Context()
	_, err := w.put(ctx, obj{Name: "pre-gold", Tier: "gold"})
	require.NoError(t, err)
	_, err = w.put(ctx, obj{Name: "pre-silver", Tier: "silver"})
	require.NoError(t, err)
	page, err := src.List(ctx, informer.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, "pre-gold", page.Items[0].Key)

	watch := watchFrom(t, src)
	steps := []struct {
		o    obj
		del  bool
		want *seen
	}{
		{o: obj{Name: "a", Tier: "silver"}},                                                     // created outside: nothing
		{o: obj{Name: "a", Tier: "gold"}, want: &seen{informer.EventAdded, "a", "gold", false}}, // enters
		{o: obj{Name: "a", Tier: "gold", Gen: 2}, want: &seen{informer.EventModified, "a", "gold", false}},
		{o: obj{Name: "a", Tier: "silver"}, want: &seen{informer.EventDeleted, "a", "gold", false}}, // leaves: last matching state
		{o: obj{Name: "a"}, del: true},                                                              // deleted outside: nothing
		{o: obj{Name: "b", Tier: "gold"}, want: &seen{informer.EventAdded, "b", "gold", false}},
		{o: obj{Name: "b"}, del: true, want: &seen{informer.EventDeleted, "b", "gold", false}},
		{o: obj{Name: "c", Tier: "gold"}, want: &seen{informer.EventAdded, "c", "gold", false}},
	}
	for i, s := range steps {
		if s.del {
			_, err = w.del(ctx, s.o.Name)
		} else {
			_, err = w.put(ctx, s.o)
		}
		require.NoError(t, err)
		if s.want != nil {
			require.Equal(t, *s.want, see(next(t, watch)), "step %d", i)
		}
	}
}

// A bad value is reported with its key and revision, never delivered as a
// put, makes the key leave the cache, and does not stop the watch; a later
// good value comes back (as Modified: without a Filter the previous value of
// a put is not decoded); the delete of a bad value arrives with the key only.
func TestBadValue(t *testing.T) {
	w := writer{c: client(t), prefix: newPrefix(t)}
	var mu sync.Mutex
	var reported []*etcd.DecodeError
	src := newSource(t, etcd.Options[obj]{Client: w.c, Prefix: w.prefix, StripPrefix: true,
		ErrorHandler: func(_ context.Context, err error) {
			var de *etcd.DecodeError
			if assert.ErrorAs(t, err, &de) && assert.ErrorIs(t, err, etcd.ErrDecode) {
				mu.Lock()
				reported = append(reported, de)
				mu.Unlock()
			}
		}})
	ctx := t.Context()
	lastReport := func() etcd.DecodeError {
		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, reported)
		return *reported[len(reported)-1]
	}

	_, err := w.put(ctx, obj{Name: "good", Tier: "gold"})
	require.NoError(t, err)
	vBad, err := w.putRaw(ctx, "bad", "{not json")
	require.NoError(t, err)
	page, err := src.List(ctx, informer.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1, "the list skips the bad value")
	require.Equal(t, uint64(1), src.DecodeErrors())
	require.Equal(t, w.key("bad"), lastReport().Key)
	require.Equal(t, vBad, fmt.Sprint(lastReport().ModRevision))

	watch := watchFrom(t, src)
	_, err = w.put(ctx, obj{Name: "x", Tier: "gold"})
	require.NoError(t, err)
	require.Equal(t, seen{informer.EventAdded, "x", "gold", false}, see(next(t, watch)))
	v, err := w.putRaw(ctx, "x", "garbage")
	require.NoError(t, err)
	require.Equal(t, seen{informer.EventDeleted, "x", "gold", false}, see(next(t, watch)), "bad value: the key leaves")
	require.Equal(t, v, fmt.Sprint(lastReport().ModRevision))
	_, err = w.put(ctx, obj{Name: "x", Tier: "silver"})
	require.NoError(t, err)
	require.Equal(t, seen{informer.EventModified, "x", "silver", false}, see(next(t, watch)), "a later good value")
	_, err = w.del(ctx, "bad")
	require.NoError(t, err)
	require.Equal(t, seen{informer.EventDeleted, "bad", "", true}, see(next(t, watch)), "delete of a bad value")
	_, err = w.putRaw(ctx, "y", "garbage")
	require.NoError(t, err)
	_, err = w.put(ctx, obj{Name: "z", Tier: "gold"})
	require.NoError(t, err)
	require.Equal(t, seen{informer.EventAdded, "z", "gold", false}, see(next(t, watch)), "a bad create is skipped, the watch goes on")
	require.Equal(t, uint64(4), src.DecodeErrors())
}

// With a Filter, the previous value of a put is decoded: a good value after
// a bad one comes back as Added.
func TestBadValueWithFilter(t *testing.T) {
	w := writer{c: client(t), prefix: newPrefix(t)}
	src := newSource(t, etcd.Options[obj]{Client: w.c, Prefix: w.prefix, StripPrefix: true,
		Filter: func(string, obj) bool { return true }})
	ctx := t.Context()
	watch := watchFrom(t, src)
	_, err := w.put(ctx, obj{Name: "x", Tier: "gold"})
	require.NoError(t, err)
	require.Equal(t, seen{informer.EventAdded, "x", "gold", false}, see(next(t, watch)))
	_, err = w.putRaw(ctx, "x", "garbage")
	require.NoError(t, err)
	require.Equal(t, seen{informer.EventDeleted, "x", "gold", false}, see(next(t, watch)))
	_, err = w.put(ctx, obj{Name: "x", Tier: "silver"})
	require.NoError(t, err)
	require.Equal(t, seen{informer.EventAdded, "x", "silver", false}, see(next(t, watch)))
	_, err = w.put(ctx, obj{Name: "x", Tier: "bronze"})
	require.NoError(t, err)
	require.Equal(t, seen{informer.EventModified, "x", "bronze", false}, see(next(t, watch)))
}

// A failing or panicking transform and a panicking codec are bad values too.
func TestBadTransformAndCodec(t *testing.T) {
	w := writer{c: client(t), prefix: newPrefix(t)}
	ctx := t.Context()
	_, err := w.put(ctx, obj{Name: "fail", Tier: "gold"})
	require.NoError(t, err)
	_, err = w.put(ctx, obj{Name: "panic", Tier: "gold"})
	require.NoError(t, err)
	_, err = w.put(ctx, obj{Name: "ok", Tier: "gold"})
	require.NoError(t, err)
	src := newSource(t, etcd.Options[obj]{Client: w.c, Prefix: w.prefix, StripPrefix: true,
		Transform: func(_ context.Context, key string, data []byte) ([]byte, error) {
			switch key {
			case w.key("fail"):
				return nil, errors.New("cannot decrypt")
			case w.key("panic"):
				panic("boom")
			}
			return data, nil
		}})
	page, err := src.List(ctx, informer.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, "ok", page.Items[0].Key)
	require.Equal(t, uint64(2), src.DecodeErrors())

	raw, err := etcd.New(etcd.Options[[]byte]{Client: w.c, Prefix: w.prefix, Codec: panicCodec{}})
	require.NoError(t, err)
	rpage, err := raw.List(ctx, informer.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, rpage.Items)
	require.Equal(t, uint64(3), raw.DecodeErrors())
}

type panicCodec struct{ etcd.RawCodec }

// A codec without DecodeInto is called through Decode; one with it, through
// DecodeInto, where a panic makes a bad value as it does in Decode.
func TestCodecDecodeInto(t *testing.T) {
	w := writer{c: client(t), prefix: newPrefix(t)}
	ctx := t.Context()
	_, err := w.put(ctx, obj{Name: "x", Gen: 3, Tier: "gold"})
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		codec etcd.Codec[obj]
		want  []obj
		bad   uint64
	}{
		{"json", etcd.JSONCodec[obj]{}, []obj{{Name: "x", Gen: 3, Tier: "gold"}}, 0},
		{"decode only", decodeOnly{}, []obj{{Name: "x", Gen: 3, Tier: "gold"}}, 0},
		{"panicking DecodeInto", panicInto{}, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t, etcd.Options[obj]{Client: w.c, Prefix: w.prefix, Codec: tc.codec})
			page, err := src.List(ctx, informer.ListOptions{})
			require.NoError(t, err)
			var got []obj
			for _, o := range page.Items {
				got = append(got, o.Value)
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.bad, src.DecodeErrors())
		})
	}
}

// decodeOnly is a JSON codec without DecodeInto.
type decodeOnly struct{}

func (decodeOnly) Decode(b []byte) (obj, error) { return etcd.JSONCodec[obj]{}.Decode(b) }
func (decodeOnly) Encode(v obj) ([]byte, error) { return json.Marshal(v) }

var _ etcd.DecoderInto[obj] = panicInto{}

type panicInto struct{ etcd.JSONCodec[obj] }

func (panicInto) DecodeInto([]byte, *obj) error { panic("codec bug") }

func (panicCodec) Decode([]byte) ([]byte, error) { panic("codec bug") }

// Read modes and tokens map to the contract's errors.
func TestListErrors(t *testing.T) {
	w := writer{c: client(t), prefix: newPrefix(t)}
	src := newSource(t, etcd.Options[obj]{Client: w.c, Prefix: w.prefix})
	ctx := t.Context()
	v, err := w.create(ctx, "a")
	require.NoError(t, err)
	_, err = w.create(ctx, "b")
	require.NoError(t, err)
	future := fmt.Sprint(compareVersions(v, "0")*0 + 1_000_000_000)
	for _, tc := range []struct {
		name string
		opts informer.ListOptions
		want error
	}{
		{"exact future", informer.ListOptions{Mode: informer.ReadExact, Version: future}, informer.ErrVersionTooLarge},
		{"not older than future", informer.ListOptions{Mode: informer.ReadNotOlderThan, Version: future}, informer.ErrVersionTooLarge},
		{"bad version", informer.ListOptions{Mode: informer.ReadExact, Version: "x"}, informer.ErrInvalidOptions},
		{"bad token", informer.ListOptions{Continue: "!!"}, informer.ErrInvalidOptions},
		{"unknown mode", informer.ListOptions{Mode: 42}, informer.ErrInvalidOptions},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := src.List(ctx, tc.opts)
			require.ErrorIs(t, err, tc.want)
		})
	}
	// A token of another prefix is refused.
	page, err := src.List(ctx, informer.ListOptions{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, page.Continue)
	other := newSource(t, etcd.Options[obj]{Client: w.c, Prefix: w.prefix + "zz/"})
	_, err = other.List(ctx, informer.ListOptions{Continue: page.Continue})
	require.ErrorIs(t, err, informer.ErrInvalidOptions)
	_, err = src.Watch(ctx, informer.WatchOptions{Version: "nope"})
	require.ErrorIs(t, err, informer.ErrInvalidOptions)
}

// A consumer that does not read stops the source, which resumes in order
// when the consumer catches up: nothing is dropped or reordered.
func TestWatchBackpressure(t *testing.T) {
	w := writer{c: client(t), prefix: newPrefix(t)}
	src := newSource(t, etcd.Options[obj]{Client: w.c, Prefix: w.prefix, WatchBuffer: 2, StripPrefix: true})
	watch := watchFrom(t, src)
	ctx := t.Context()
	const n = 300
	for i := range n {
		_, err := w.put(ctx, obj{Name: fmt.Sprintf("k%03d", i), Gen: i})
		require.NoError(t, err)
	}
	require.LessOrEqual(t, len(watch.Events()), 2, "buffer bound")
	for i := range n {
		ev := next(t, watch)
		require.Equal(t, fmt.Sprintf("k%03d", i), ev.Object.Key)
		require.Equal(t, i, ev.Object.Value.Gen)
	}
}

// The server's periodic progress notifications become bookmarks.
func TestPeriodicProgress(t *testing.T) {
	s := etcdtest.New(t, etcdtest.Config{ProgressNotifyInterval: 100 * time.Millisecond})
	c := s.NewTestClient(t)
	w := writer{c: c, prefix: "/periodic/"}
	v, err := w.create(t.Context(), "a")
	require.NoError(t, err)
	src := newSource(t, etcd.Options[obj]{Client: c, Prefix: w.prefix, LivenessTimeout: -1})
	watch, err := src.Watch(t.Context(), informer.WatchOptions{Version: v})
	require.NoError(t, err)
	defer watch.Stop()
	select {
	case ev := <-watch.Events():
		require.Equal(t, informer.EventBookmark, ev.Type)
		require.GreaterOrEqual(t, compareVersions(ev.Version, v), 0)
	case <-time.After(5 * time.Second):
		t.Fatal("no periodic bookmark")
	}
}

// On a half-open connection (the flow silently dropped), the watch moves to
// a fresh connection within a few seconds, in the same stream, instead of
// waiting forever; when fresh connections go unanswered too, it ends with
// ErrTransient.
func TestHalfOpenDetected(t *testing.T) {
	proxy, err := etcdtest.NewProxy(srv.Etcd().Clients[0].Addr().String())
	require.NoError(t, err)
	defer proxy.Close()
	viaProxy, err := etcdtest.NewClient(proxy.Endpoint())
	require.NoError(t, err)
	defer viaProxy.Close()
	direct := writer{c: client(t), prefix: newPrefix(t)}
	src := newSource(t, etcd.Options[obj]{Client: viaProxy, Prefix: direct.prefix, StripPrefix: true,
		LivenessInterval: 300 * time.Millisecond, LivenessTimeout: time.Second})
	watch := watchFrom(t, src)
	_, err = direct.create(t.Context(), "a")
	require.NoError(t, err)
	require.Equal(t, "a", next(t, watch).Object.Key)

	proxy.Blackhole() // the open flows only: new connections work
	start := time.Now()
	_, err = direct.create(t.Context(), "b")
	require.NoError(t, err)
	ev := next(t, watch)
	require.Equal(t, informer.EventAdded, ev.Type, "got %v %v %v", ev.Type, ev.Object, ev.Err)
	require.Equal(t, "b", ev.Object.Key)
	took := time.Since(start)
	require.Less(t, took, 3*time.Second, "detection and move")
	t.Logf("half-open connection replaced in %v", took)

	proxy.SetBlackhole(true) // new connections too
	start = time.Now()
	_, err = direct.create(t.Context(), "c")
	require.NoError(t, err)
	ev = next(t, watch)
	require.Equal(t, informer.EventError, ev.Type, "got %v %v", ev.Type, ev.Object)
	require.ErrorIs(t, ev.Err, informer.ErrTransient)
	took = time.Since(start)
	require.Less(t, took, 5*time.Second, "detection, and a probe no member answered")
	t.Logf("unreachable: the watch ended in %v: %v", took, ev.Err)
	_, ok := <-watch.Events()
	require.False(t, ok, "closed after the Error event")
}

// An idle watch on a quiet cluster passes its liveness probes (they are
// answered with bookmarks), and answers on-demand progress requests.
func TestIdleWatchStaysAlive(t *testing.T) {
	s := etcdtest.New(t, etcdtest.Config{})
	c := s.NewTestClient(t)
	w := writer{c: c, prefix: "/idle/"}
	v, err := w.create(t.Context(), "a")
	require.NoError(t, err)
	src := newSource(t, etcd.Options[obj]{Client: c, Prefix: w.prefix,
		LivenessInterval: 50 * time.Millisecond, LivenessTimeout: 200 * time.Millisecond})
	watch, err := src.Watch(t.Context(), informer.WatchOptions{Version: v})
	require.NoError(t, err)
	defer watch.Stop()
	require.Greater(t, bookmarksFor(t, watch, v, time.Second), 2, "liveness probes answered")

	// On demand, with liveness probes off.
	quiet := newSource(t, etcd.Options[obj]{Client: c, Prefix: w.prefix, LivenessTimeout: -1})
	qw, err := quiet.Watch(t.Context(), informer.WatchOptions{Version: v})
	require.NoError(t, err)
	defer qw.Stop()
	for range 3 {
		require.NoError(t, quiet.RequestProgress(t.Context()))
		select {
		case ev := <-qw.Events():
			require.Equal(t, informer.EventBookmark, ev.Type)
			require.Equal(t, v, ev.Version)
		case <-time.After(5 * time.Second):
			t.Fatal("no bookmark after RequestProgress")
		}
	}
}

// A liveness probe sent while the watch is still unsynced (etcd syncs a new
// watch within 100 ms, and drops progress requests until then) is resent, so
// a live watch is not declared dead: fresh watches probed after 10 ms, each
// given 300 ms to answer, stay alive. Fails without the resend.
func TestEarlyLivenessProbeResent(t *testing.T) {
	s := etcdtest.New(t, etcdtest.Config{})
	c := s.NewTestClient(t)
	w := writer{c: c, prefix: "/early/"}
	_, err := w.create(t.Context(), "a")
	require.NoError(t, err)
	// Watched from a revision outside the prefix, a new watch gets no event
	// when etcd syncs it: only a progress notification can answer a probe.
	other := writer{c: c, prefix: "/other/"}
	v, err := other.create(t.Context(), "b")
	require.NoError(t, err)
	src := newSource(t, etcd.Options[obj]{Client: c, Prefix: w.prefix,
		LivenessInterval: 10 * time.Millisecond, LivenessTimeout: 300 * time.Millisecond})
	for range 5 {
		watch, err := src.Watch(t.Context(), informer.WatchOptions{Version: v})
		require.NoError(t, err)
		bookmarks := bookmarksFor(t, watch, v, 600*time.Millisecond)
		watch.Stop()
		require.Positive(t, bookmarks, "probes answered")
	}
}

// bookmarksFor reads watch for d, requiring every event to be a bookmark at
// version, and returns how many came.
func bookmarksFor(t *testing.T, watch informer.Watcher[*etcd.Object[obj]], version string, d time.Duration) int {
	t.Helper()
	deadline := time.After(d)
	bookmarks := 0
	for {
		select {
		case ev, ok := <-watch.Events():
			require.True(t, ok)
			require.Equal(t, informer.EventBookmark, ev.Type, "%v", ev.Err)
			require.Equal(t, version, ev.Version)
			bookmarks++
		case <-deadline:
			return bookmarks
		}
	}
}

func TestCompareVersions(t *testing.T) {
	src, err := etcd.New(etcd.Options[obj]{Client: client(t), Prefix: "/cmp/"})
	require.NoError(t, err)
	var c informer.VersionComparer = src
	tests := []struct {
		a, b string
		want int
	}{
		{"1", "2", -1},
		{"2", "1", +1},
		{"7", "7", 0},
		{"9", "10", -1}, // as integers, not strings
		{"0", "1", -1},
	}
	for _, tt := range tests {
		got, err := c.CompareVersions(tt.a, tt.b)
		require.NoError(t, err, "%q vs %q", tt.a, tt.b)
		assert.Equal(t, tt.want, got, "%q vs %q", tt.a, tt.b)
	}
	for _, bad := range [][2]string{{"", "1"}, {"1", "x"}, {"-1", "1"}, {"1", "99999999999999999999"}} {
		_, err := c.CompareVersions(bad[0], bad[1])
		require.ErrorIs(t, err, informer.ErrInvalidVersion, "%q vs %q", bad[0], bad[1])
	}
}
