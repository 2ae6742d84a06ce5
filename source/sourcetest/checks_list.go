package sourcetest

import (
	"fmt"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// checkListLatest: a ReadLatest list reflects every completed write.
func checkListLatest[T any](k *kit[T]) {
	state, _ := k.listAll(informer.ListOptions{})
	require.Empty(k.t, state, "a new harness's collection")
	k.create("a")
	k.create("b")
	k.create("c")
	k.update("a")
	k.update("a")
	k.del("b")
	state, _ = k.listAll(informer.ListOptions{Mode: informer.ReadLatest})
	require.Equal(k.t, map[string]int{"a": 3, "c": 1}, state, "ReadLatest must reflect every completed write")
	k.create("b")
	state, _ = k.listAll(informer.ListOptions{})
	require.Equal(k.t, map[string]int{"a": 3, "b": 1, "c": 1}, state, "ReadLatest must reflect every completed write")
}

// checkListModes: ReadNotOlderThan a write's version sees that write;
// ReadAny succeeds with a consistent page.
func checkListModes[T any](k *kit[T]) {
	k.create("a")
	v := k.update("a")
	state, _ := k.listAll(informer.ListOptions{Mode: informer.ReadNotOlderThan, Version: v})
	require.Equal(k.t, map[string]int{"a": 2}, state, "ReadNotOlderThan %s must see the write at %s", v, v)
	state, _ = k.listAll(informer.ListOptions{Mode: informer.ReadAny})
	for name, gen := range state {
		require.Equal(k.t, "a", name, "ReadAny lists an object never created")
		require.LessOrEqual(k.t, gen, 2)
	}
	_, listed := k.listAll(informer.ListOptions{})
	if c := k.h.CompareVersions; c != nil {
		require.GreaterOrEqual(k.t, c(listed, v), 0, "ReadLatest version %s older than a completed write's %s", listed, v)
	}
}

// checkListExact: ReadExact v lists exactly the objects that existed at v,
// in the state they had then.
func checkListExact[T any](k *kit[T]) {
	if k.h.DisableReadExact {
		k.t.Skip("harness: ReadExact unsupported")
	}
	k.create("a")
	k.create("b")
	v1 := k.create("c")
	k.update("a")
	k.del("b")
	v2 := k.create("d")
	k.update("d")

	state, version := k.listAll(informer.ListOptions{Mode: informer.ReadExact, Version: v1})
	require.Equal(k.t, map[string]int{"a": 1, "b": 1, "c": 1}, state, "state at %s", v1)
	require.Equal(k.t, v1, version, "ReadExact page version")
	state, _ = k.listAll(informer.ListOptions{Mode: informer.ReadExact, Version: v2})
	require.Equal(k.t, map[string]int{"a": 2, "c": 1, "d": 1}, state, "state at %s", v2)
	state, _ = k.listAll(informer.ListOptions{Mode: informer.ReadExact, Version: v1, Limit: 1})
	require.Equal(k.t, map[string]int{"a": 1, "b": 1, "c": 1}, state, "paged state at %s", v1)
}

// checkListPages: the pages of one list show one state, the one at the
// first page's version, whatever is written between pages.
func checkListPages[T any](k *kit[T]) {
	const n = 10
	want := map[string]int{}
	for i := range n {
		name := fmt.Sprintf("p%02d", i)
		k.create(name)
		want[name] = 1
	}
	for _, limit := range []int{1, 3, 4, n, n + 1} {
		opts := informer.ListOptions{Limit: limit}
		first, err := k.list(opts)
		require.NoError(k.t, err)
		require.LessOrEqual(k.t, len(first.Items), limit)
		got := map[string]int{}
		for i, obj := range first.Items {
			name, gen := k.describeObject(obj, fmt.Sprintf("limit %d: item %d of the first page", limit, i))
			got[name] = gen
		}
		// Writes between pages must not show in the later pages.
		k.create(fmt.Sprintf("q%02d", limit))
		k.update("p00")
		k.update("p09")
		k.del("p05")
		if first.Continue != "" {
			rest, version := k.listAll(informer.ListOptions{Limit: limit, Continue: first.Continue})
			if version != first.Version {
				k.t.Fatalf("limit %d: the pages after the first are at version %q, the first at %q; the contract "+
					"requires every page of one list at the first page's version", limit, version, first.Version)
			}
			for name, gen := range rest {
				if _, dup := got[name]; dup {
					k.t.Fatalf("limit %d: %s is on two pages of one list", limit, name)
				}
				got[name] = gen
			}
		}
		require.Equal(k.t, want, got, "limit %d: the union of the pages must be the state at the first page's version %s, "+
			"whatever was written between pages (the continue token pins the version)", limit, first.Version)
		// Reset the collection to want for the next round.
		k.del(fmt.Sprintf("q%02d", limit))
		k.create("p05")
		want = map[string]int{}
		state, _ := k.listAll(informer.ListOptions{})
		for name, gen := range state {
			want[name] = gen
		}
	}
}

// checkExpired: after Compact, older versions give ErrExpired from
// List(ReadExact), continue tokens and Watch (returned by Watch, or as the
// first event, an Error one: both are accepted).
func checkExpired[T any](k *kit[T]) {
	if k.h.Compact == nil {
		k.t.Skip("harness: no Compact")
	}
	v1 := k.create("a")
	k.create("b")
	first, err := k.list(informer.ListOptions{Limit: 1})
	require.NoError(k.t, err)
	k.update("a")
	k.update("b")
	require.NoError(k.t, k.h.Compact(k.ctx), "compact")

	if !k.h.DisableReadExact {
		_, err := k.list(informer.ListOptions{Mode: informer.ReadExact, Version: v1})
		require.ErrorIs(k.t, err, informer.ErrExpired, "List ReadExact %s after Compact: the version is compacted", v1)
	}
	if first.Continue != "" {
		_, err := k.list(informer.ListOptions{Limit: 1, Continue: first.Continue})
		require.ErrorIs(k.t, err, informer.ErrExpired, "List with the continue token of a list at %s, after Compact", first.Version)
	}
	k.requireWatchError(informer.WatchOptions{Version: v1}, informer.ErrExpired, "a compacted version")

	// The current version is still served.
	state, v := k.listAll(informer.ListOptions{})
	require.Equal(k.t, map[string]int{"a": 2, "b": 2}, state)
	s := k.watch(k.ctx, informer.WatchOptions{Version: v})
	vc := k.create("c")
	s.expect(change{informer.EventAdded, "c", 1, vc})
}
