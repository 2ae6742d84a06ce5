package memory_test

import (
	"cmp"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		opts memory.Options[string, *obj]
	}{
		{"no key func", memory.Options[string, *obj]{}},
		{"negative history", memory.Options[string, *obj]{KeyFunc: objKey, HistorySize: -1}},
		{"negative buffer", memory.Options[string, *obj]{KeyFunc: objKey, WatchBuffer: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := memory.New(tt.opts)
			require.ErrorIs(t, err, informer.ErrInvalidOptions)
		})
	}
}

func TestPutDeleteGet(t *testing.T) {
	s := newStore(t, memory.Options[string, *obj]{})
	require.Equal(t, "1", s.Version(), "empty store")
	require.Equal(t, "2", put(t, s, "a", 1))
	require.Equal(t, "3", put(t, s, "b", 1))
	require.Equal(t, "4", put(t, s, "a", 2))

	o, v, ok := s.Get("a")
	require.True(t, ok)
	assert.Equal(t, 2, o.Gen)
	assert.Equal(t, "4", v, "mod version")
	_, v, _ = s.Get("b")
	assert.Equal(t, "3", v)

	v, existed := s.Delete("a")
	assert.True(t, existed)
	assert.Equal(t, "5", v)
	v, existed = s.Delete("a")
	assert.False(t, existed)
	assert.Equal(t, "5", v, "deleting a missing key uses no revision")
	_, _, ok = s.Get("a")
	assert.False(t, ok)
	assert.Equal(t, 1, s.Len())
	assert.Equal(t, "5", s.Version())
}

func TestPutKeyFuncFailure(t *testing.T) {
	boom := errors.New("boom")
	s := newStore(t, memory.Options[string, *obj]{KeyFunc: func(o *obj) (string, error) {
		switch o.Name {
		case "err":
			return "", boom
		case "panic":
			panic("key")
		}
		return o.Name, nil
	}})
	_, err := s.Put(&obj{Name: "err"})
	require.ErrorIs(t, err, informer.ErrKeyFunc)
	require.ErrorIs(t, err, boom)
	_, err = s.Put(&obj{Name: "panic"})
	require.ErrorIs(t, err, informer.ErrKeyFunc)
	assert.Equal(t, "1", s.Version(), "nothing written")
}

func TestListErrors(t *testing.T) {
	s := newStore(t, memory.Options[string, *obj]{HistorySize: 2})
	for i := range 5 {
		put(t, s, "a", i) // versions 2..6; history keeps 5..6, so 4 is the oldest
	}
	tests := []struct {
		name string
		opts informer.ListOptions
		want error
	}{
		{"exact future", informer.ListOptions{Mode: informer.ReadExact, Version: "7"}, informer.ErrVersionTooLarge},
		{"not older than future", informer.ListOptions{Mode: informer.ReadNotOlderThan, Version: "99"}, informer.ErrVersionTooLarge},
		{"exact compacted", informer.ListOptions{Mode: informer.ReadExact, Version: "3"}, informer.ErrExpired},
		{"bad version", informer.ListOptions{Mode: informer.ReadExact, Version: "x"}, informer.ErrInvalidOptions},
		{"negative version", informer.ListOptions{Mode: informer.ReadExact, Version: "-1"}, informer.ErrInvalidOptions},
		{"bad token", informer.ListOptions{Continue: "nope"}, informer.ErrInvalidOptions},
		{"bad token numbers", informer.ListOptions{Continue: "mem1:x:1"}, informer.ErrInvalidOptions},
		{"token past end", informer.ListOptions{Continue: "mem1:6:9"}, informer.ErrInvalidOptions},
		{"token future", informer.ListOptions{Continue: "mem1:60:0"}, informer.ErrVersionTooLarge},
		{"negative limit", informer.ListOptions{Limit: -1}, informer.ErrInvalidOptions},
		{"unknown mode", informer.ListOptions{Mode: 42}, informer.ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.List(t.Context(), tt.opts)
			require.ErrorIs(t, err, tt.want)
		})
	}
	page, err := s.List(t.Context(), informer.ListOptions{Mode: informer.ReadExact, Version: "4"})
	require.NoError(t, err, "the oldest retained version")
	require.Equal(t, 2, page.Items[0].Gen)
}

func TestListOrder(t *testing.T) {
	t.Run("string keys", func(t *testing.T) {
		s := newStore(t, memory.Options[string, *obj]{})
		for _, n := range []string{"c", "a", "d", "b"} {
			put(t, s, n, 1)
		}
		page, err := s.List(t.Context(), informer.ListOptions{})
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b", "c", "d"}, names(page.Items))
	})
	t.Run("Stringer keys", func(t *testing.T) {
		type pod struct{ ns, name string }
		s, err := memory.New(memory.Options[informer.NamespacedKey, pod]{
			KeyFunc: func(p pod) (informer.NamespacedKey, error) {
				return informer.NamespacedKey{Namespace: p.ns, Name: p.name}, nil
			},
		})
		require.NoError(t, err)
		defer s.Close()
		for _, p := range []pod{{"b", "x"}, {"a", "y"}, {"a", "x"}} {
			_, err := s.Put(p)
			require.NoError(t, err)
		}
		page, err := s.List(t.Context(), informer.ListOptions{})
		require.NoError(t, err)
		assert.Equal(t, []pod{{"a", "x"}, {"a", "y"}, {"b", "x"}}, page.Items)
	})
	t.Run("Compare", func(t *testing.T) {
		s, err := memory.New(memory.Options[int, int]{
			KeyFunc: func(i int) (int, error) { return i, nil },
			Compare: cmp.Compare[int],
		})
		require.NoError(t, err)
		defer s.Close()
		for _, i := range []int{10, 9, 100, 1} {
			_, err := s.Put(i)
			require.NoError(t, err)
		}
		page, err := s.List(t.Context(), informer.ListOptions{Limit: 3})
		require.NoError(t, err)
		assert.Equal(t, []int{1, 9, 10}, page.Items)
		page, err = s.List(t.Context(), informer.ListOptions{Continue: page.Continue})
		require.NoError(t, err)
		assert.Equal(t, []int{100}, page.Items)
		assert.Empty(t, page.Continue)
	})
}

func TestCompact(t *testing.T) {
	s := newStore(t, memory.Options[string, *obj]{})
	v1 := put(t, s, "a", 1)
	v2 := put(t, s, "a", 2)
	v3 := put(t, s, "a", 3)
	require.ErrorIs(t, s.Compact("99"), informer.ErrVersionTooLarge)
	require.ErrorIs(t, s.Compact("x"), informer.ErrInvalidOptions)
	require.NoError(t, s.Compact(v2))
	require.NoError(t, s.Compact(v1), "compacting backwards is a no-op")

	_, err := s.List(t.Context(), informer.ListOptions{Mode: informer.ReadExact, Version: v1})
	require.ErrorIs(t, err, informer.ErrExpired)
	_, err = s.Watch(t.Context(), informer.WatchOptions{Version: v1})
	require.ErrorIs(t, err, informer.ErrExpired)
	page, err := s.List(t.Context(), informer.ListOptions{Mode: informer.ReadExact, Version: v2})
	require.NoError(t, err, "the compaction version itself is served")
	require.Equal(t, 2, page.Items[0].Gen)

	s.CompactAll()
	_, err = s.List(t.Context(), informer.ListOptions{Mode: informer.ReadExact, Version: v2})
	require.ErrorIs(t, err, informer.ErrExpired)
	page, err = s.List(t.Context(), informer.ListOptions{Mode: informer.ReadExact, Version: v3})
	require.NoError(t, err)
	require.Equal(t, 3, page.Items[0].Gen)
}

func TestClose(t *testing.T) {
	s := newStore(t, memory.Options[string, *obj]{})
	w, err := s.Watch(t.Context(), informer.WatchOptions{Version: s.Version()})
	require.NoError(t, err)
	put(t, s, "a", 1)
	s.Close()
	s.Close()
	for range w.Events() { // drains, then closed
	}
	_, err = s.Watch(t.Context(), informer.WatchOptions{Version: s.Version()})
	require.ErrorIs(t, err, informer.ErrClosed)
	put(t, s, "b", 1)
	page, err := s.List(context.Background(), informer.ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, names(page.Items))
}

func names(objs []*obj) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Name
	}
	return out
}
