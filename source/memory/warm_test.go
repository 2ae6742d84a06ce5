package memory_test

import (
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

// The parts of the store that warm restarts use: watches that notify when
// they have caught up, snapshot identities and codecs. The conformance kit
// checks the contract; these tests check what is particular to the store.

// untilMarker reads events up to the caught-up marker and returns them,
// the marker last.
func untilMarker(t *testing.T, w informer.Watcher[*obj]) []string {
	t.Helper()
	var got []string
	for {
		ev, ok := recv(t, w)
		require.True(t, ok, "closed after %v", got)
		got = append(got, describe(ev))
		if ev.InitialEventsEnd {
			return got
		}
	}
}

// The marker comes right after the change at the store's version when the
// watch opened, also past a batch of the history (256 records), and never
// again.
func TestCaughtUpMarkerAtTheVersionOfWatch(t *testing.T) {
	s := newStore(t, memory.Options[string, *obj]{BookmarkInterval: -1})
	from := put(t, s, "a", 1)
	var want []string
	for i := range 300 {
		v := put(t, s, "a", i+2)
		want = append(want, fmt.Sprintf("Modified a/%d/@%s", i+2, v))
	}
	head := s.Version()
	w, err := s.Watch(t.Context(), informer.WatchOptions{Version: from, NotifyCaughtUp: true})
	require.NoError(t, err)
	defer w.Stop()
	// A write after Watch comes after the marker, whether the watcher has
	// read it from the history before sending the marker or not.
	later := put(t, s, "b", 1)
	want = append(want, "Bookmark@"+head+" end=true")
	require.Equal(t, want, untilMarker(t, w))
	ev, _ := recv(t, w)
	require.Equal(t, "Added b/1/@"+later, describe(ev))
	s.RequestBookmarks()
	ev, _ = recv(t, w)
	require.Equal(t, "Bookmark@"+later+" end=false", describe(ev))
}

// A filtered view's marker carries the store's version, past changes the
// view does not see; with nothing after the watch's version, it comes at
// once.
func TestCaughtUpFiltered(t *testing.T) {
	s := newStore(t, memory.Options[string, *obj]{BookmarkInterval: -1})
	view := s.Filtered(func(o *obj) bool { return o.Tier == "a" })
	from := s.Version()
	va, err := s.Put(&obj{Name: "x", Gen: 1, Tier: "a"})
	require.NoError(t, err)
	_, err = s.Put(&obj{Name: "y", Gen: 1, Tier: "b"})
	require.NoError(t, err)
	head := s.Version()
	for _, tc := range []struct {
		from string
		want []string
	}{
		{from, []string{"Added x/1/a@" + va, "Bookmark@" + head + " end=true"}},
		{head, []string{"Bookmark@" + head + " end=true"}},
	} {
		w, err := view.Watch(t.Context(), informer.WatchOptions{Version: tc.from, NotifyCaughtUp: true})
		require.NoError(t, err)
		require.Equal(t, tc.want, untilMarker(t, w), "from %s", tc.from)
		w.Stop()
	}
}

// A streaming list has one InitialEventsEnd bookmark, NotifyCaughtUp or
// not.
func TestCaughtUpStreamingListOneMarker(t *testing.T) {
	s := newStore(t, memory.Options[string, *obj]{BookmarkInterval: -1})
	put(t, s, "a", 1)
	v := put(t, s, "b", 1)
	w, err := s.Watch(t.Context(), informer.WatchOptions{SendInitialEvents: true, NotifyCaughtUp: true})
	require.NoError(t, err)
	defer w.Stop()
	require.Equal(t, []string{"Added a/1/@" + v, "Added b/1/@" + v, "Bookmark@" + v + " end=true"}, untilMarker(t, w))
	vc := put(t, s, "c", 1)
	ev, _ := recv(t, w)
	require.Equal(t, "Added c/1/@"+vc, describe(ev))
}

func TestSnapshotIdentity(t *testing.T) {
	ctx := t.Context()
	id := func(src informer.Source[*obj]) string {
		t.Helper()
		ss, ok := src.(informer.SnapshotSource[*obj])
		require.True(t, ok, "%T is no SnapshotSource", src)
		s, err := ss.SnapshotIdentity(ctx)
		require.NoError(t, err)
		return s
	}
	s1 := newStore(t, memory.Options[string, *obj]{})
	s2 := newStore(t, memory.Options[string, *obj]{})
	pred := func(o *obj) bool { return o.Tier == "a" }
	v1, v2 := s1.Filtered(pred), s1.Filtered(pred)

	before := id(s1)
	put(t, s1, "a", 1)
	require.Equal(t, before, id(s1), "stable across writes")
	require.Contains(t, before, "memory")
	ids := map[string]string{"s1": id(s1), "s2": id(s2), "s1 view 1": id(v1), "s1 view 2": id(v2)}
	seen := map[string]string{}
	for name, id := range ids {
		require.NotContains(t, seen, id, "%s and %s", name, seen[id])
		seen[id] = name
	}
	require.Equal(t, ids["s1 view 1"], id(v1), "a view's identity is stable")
}

// bangCodec is a codec of its own, to see that Options.Codec is the one
// used: name, generation, "!" (it does not decode).
type bangCodec struct{}

func (bangCodec) Format() string { return "bang/1" }
func (bangCodec) AppendEncode(dst []byte, o *obj) ([]byte, error) {
	return append(strconv.AppendInt(append(dst, o.Name...), int64(o.Gen), 10), '!'), nil
}
func (bangCodec) Decode([]byte) (*obj, error) { return nil, errors.New("bangCodec: no decoding") }

func TestSnapshotCodec(t *testing.T) {
	o := &obj{Name: "a", Gen: 2, Tier: "x"}
	def := newStore(t, memory.Options[string, *obj]{}).SnapshotCodec()
	vc, err := informer.NewValueCodec[*obj]()
	require.NoError(t, err)
	require.Equal(t, vc.Format(), def.Format(), "the ValueCodec of *obj")
	b, err := def.AppendEncode([]byte("prefix"), o)
	require.NoError(t, err)
	require.Equal(t, "prefix", string(b[:len("prefix")]), "appends")
	got, err := def.Decode(b[len("prefix"):])
	require.NoError(t, err)
	require.Equal(t, o, got)
	_, err = def.Decode(b[len("prefix") : len(b)-1])
	require.Error(t, err, "cut short")

	s := newStore(t, memory.Options[string, *obj]{Codec: bangCodec{}})
	for _, src := range []informer.SnapshotSource[*obj]{s, s.Filtered(nil).(informer.SnapshotSource[*obj])} {
		c := src.SnapshotCodec()
		require.Equal(t, "bang/1", c.Format())
		b, err := c.AppendEncode(nil, o)
		require.NoError(t, err)
		require.Equal(t, "a2!", string(b))
	}
}

// The default codec keeps unexported fields too (the ValueCodec); for a T
// it cannot plan, JSON keeps only what encoding/json sees.
func TestSnapshotCodecDefaultKeepsUnexported(t *testing.T) {
	type hidden struct{ name string }
	s, err := memory.New(memory.Options[string, hidden]{KeyFunc: func(h hidden) (string, error) { return h.name, nil }})
	require.NoError(t, err)
	defer s.Close()
	b, err := s.SnapshotCodec().AppendEncode(nil, hidden{name: "a"})
	require.NoError(t, err)
	got, err := s.SnapshotCodec().Decode(b)
	require.NoError(t, err)
	require.Equal(t, hidden{name: "a"}, got)

	type withAny struct {
		Name string
		any  any
	}
	a, err := memory.New(memory.Options[string, withAny]{KeyFunc: func(h withAny) (string, error) { return h.Name, nil }})
	require.NoError(t, err)
	defer a.Close()
	require.Equal(t, "json", a.SnapshotCodec().Format())
	b, err = a.SnapshotCodec().AppendEncode(nil, withAny{Name: "n", any: 1})
	require.NoError(t, err)
	got2, err := a.SnapshotCodec().Decode(b)
	require.NoError(t, err)
	require.Equal(t, withAny{Name: "n"}, got2)
}
