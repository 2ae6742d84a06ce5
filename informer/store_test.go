package informer

import (
	"errors"
	"iter"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewIndexerOptions(t *testing.T) {
	ok := Index[*testPod]{Name: "a", Func: nsIndexFunc}
	tests := []struct {
		name string
		opts IndexerOptions[NamespacedKey, *testPod]
		want error
	}{
		{"valid", IndexerOptions[NamespacedKey, *testPod]{KeyFunc: podKey, Indexes: []Index[*testPod]{ok}}, nil},
		{"no indexes", IndexerOptions[NamespacedKey, *testPod]{KeyFunc: podKey}, nil},
		{"nil key func", IndexerOptions[NamespacedKey, *testPod]{}, ErrInvalidOptions},
		{"empty name", IndexerOptions[NamespacedKey, *testPod]{KeyFunc: podKey, Indexes: []Index[*testPod]{{Func: nsIndexFunc}}}, ErrInvalidOptions},
		{"nil func", IndexerOptions[NamespacedKey, *testPod]{KeyFunc: podKey, Indexes: []Index[*testPod]{{Name: "a"}}}, ErrInvalidOptions},
		{"duplicate", IndexerOptions[NamespacedKey, *testPod]{KeyFunc: podKey, Indexes: []Index[*testPod]{ok, ok}}, ErrIndexExists},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewIndexer(tt.opts)
			if tt.want == nil {
				require.NoError(t, err)
				require.NotNil(t, s)
				return
			}
			require.ErrorIs(t, err, tt.want)
			require.Nil(t, s)
		})
	}
}

// TestIndexerStore ports client-go's store_test doTestStore: add, update,
// delete, list, replace.
func TestIndexerStore(t *testing.T) {
	s := newTestIndexer(testIndexes()...)
	model := map[NamespacedKey]*testPod{}
	put := func(p *testPod) {
		require.NoError(t, s.Add(p))
		model[NamespacedKey{p.Namespace, p.Name}] = p
	}
	put(pod("ns", "foo", "app=a"))
	put(pod("ns", "bar", "app=b"))
	checkIndexer(t, s, model, testIndexes())

	// Update replaces the object under the same key.
	p := pod("ns", "foo", "app=c")
	require.NoError(t, s.Update(p))
	model[NamespacedKey{"ns", "foo"}] = p
	checkIndexer(t, s, model, testIndexes())

	// Add of an existing key is an upsert too.
	put(pod("ns", "bar", "app=c"))
	checkIndexer(t, s, model, testIndexes())

	// Delete by object, whatever its content.
	require.NoError(t, s.Delete(pod("ns", "foo")))
	delete(model, NamespacedKey{"ns", "foo"})
	checkIndexer(t, s, model, testIndexes())

	// Deleting an absent key is not an error.
	require.NoError(t, s.Delete(pod("ns", "nope")))
	old, ok := s.DeleteKey(NamespacedKey{"ns", "nope"})
	assert.False(t, ok)
	assert.Nil(t, old)
	old, ok = s.DeleteKey(NamespacedKey{"ns", "bar"})
	assert.True(t, ok)
	assert.Same(t, model[NamespacedKey{"ns", "bar"}], old)
	delete(model, NamespacedKey{"ns", "bar"})
	checkIndexer(t, s, model, testIndexes())

	// Replace swaps the whole set; a later duplicate wins.
	a, b, b2 := pod("x", "a", "app=1"), pod("x", "b", "app=2"), pod("x", "b", "app=3")
	require.NoError(t, s.Replace([]*testPod{a, b, b2}))
	model = map[NamespacedKey]*testPod{{"x", "a"}: a, {"x", "b"}: b2}
	checkIndexer(t, s, model, testIndexes())

	require.NoError(t, s.Replace(nil))
	checkIndexer(t, s, map[NamespacedKey]*testPod{}, testIndexes())
}

// TestIndexerMultiValue ports client-go's TestGetIndexFuncValues and
// TestMultiIndexKeys: a multi-value index, values removed when their set
// empties, Update moving between buckets, Index() deduplication.
func TestIndexerMultiValue(t *testing.T) {
	s := newTestIndexer(testIndexes()...)
	one := pod("ns", "one", "foo=bar")
	two := pod("ns", "two", "foo=bar", "x=y")
	tre := pod("ns", "tre", "foo=bar", "x=y", "z=w")
	for _, p := range []*testPod{one, two, tre} {
		require.NoError(t, s.Add(p))
	}
	values := func() []string {
		seq, err := s.IndexValues(labelsIndex)
		require.NoError(t, err)
		return collectStrings(seq)
	}
	byIndex := func(v string) []string {
		seq, err := s.ByIndex(labelsIndex, v)
		require.NoError(t, err)
		return collectKeys(seq)
	}
	assert.Equal(t, []string{"foo=bar", "x=y", "z=w"}, values())
	assert.Equal(t, []string{"ns/one", "ns/tre", "ns/two"}, byIndex("foo=bar"))
	assert.Equal(t, []string{"ns/tre", "ns/two"}, byIndex("x=y"))

	// Index(): objects sharing any value, each once.
	seq, err := s.Index(labelsIndex, pod("", "", "x=y", "z=w"))
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/tre", "ns/two"}, collectKeys(seq))
	seq, err = s.Index(labelsIndex, pod("", "", "foo=bar", "x=y"))
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/one", "ns/tre", "ns/two"}, collectKeys(seq))

	// Update moves tre out of z=w (which empties and disappears) and x=y.
	require.NoError(t, s.Update(pod("ns", "tre", "foo=bar", "a=b")))
	assert.Equal(t, []string{"a=b", "foo=bar", "x=y"}, values())
	assert.Equal(t, []string{"ns/two"}, byIndex("x=y"))
	assert.Empty(t, byIndex("z=w"))

	// Delete removes the object from every set; emptied values disappear.
	require.NoError(t, s.Delete(two))
	assert.Equal(t, []string{"a=b", "foo=bar"}, values())
	require.NoError(t, s.Delete(one))
	require.NoError(t, s.Delete(tre))
	assert.Empty(t, values())
	checkInternals(t, s)
}

// TestIndexerSameValuesNoBucketWork: an update keeping its values (in any
// order, with duplicates) leaves the buckets untouched.
func TestIndexerSameValuesNoBucketWork(t *testing.T) {
	s := newTestIndexer(testIndexes()...)
	require.NoError(t, s.Add(pod("ns", "a", "k1=v1", "k2=v2", "k3=v3")))
	require.NoError(t, s.Add(pod("ns", "b", "k1=v1")))
	before := s.st.Load().entries.Get(NamespacedKey{"ns", "a"}).refs
	for range 10 {
		require.NoError(t, s.Update(pod("ns", "a", "k3=v3", "k1=v1", "k2=v2")))
	}
	after := s.st.Load().entries.Get(NamespacedKey{"ns", "a"}).refs
	require.Same(t, &before[0], &after[0], "the refs array is untouched")
	require.Equal(t, before, after)
	checkInternals(t, s)
}

// TestIndexerDuplicateValues: duplicate values from an index func count once.
func TestIndexerDuplicateValues(t *testing.T) {
	dup := Index[*testPod]{Name: "dup", Func: func(dst []string, p *testPod) ([]string, error) {
		return append(dst, p.Namespace, p.Namespace, "all", p.Namespace), nil
	}}
	s := newTestIndexer(dup)
	require.NoError(t, s.Add(pod("a", "1")))
	require.NoError(t, s.Add(pod("b", "1")))
	model := map[NamespacedKey]*testPod{}
	for k, p := range s.All() {
		model[k] = p
	}
	checkIndexer(t, s, model, []Index[*testPod]{dup})
	require.NoError(t, s.Update(pod("b", "1")))
	seq, err := s.Index("dup", pod("a", "x"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a/1", "b/1"}, collectKeys(seq))
}

// TestIndexerUnknownIndex: every query on an unknown index fails with
// ErrIndexNotFound and returns an iterator that is not nil and yields
// nothing, so a caller that ignores the error and ranges does not panic.
func TestIndexerUnknownIndex(t *testing.T) {
	s := newTestIndexer(testIndexes()...)
	var zero Indexer[NamespacedKey, *testPod]
	for _, st := range []struct {
		name string
		s    *Indexer[NamespacedKey, *testPod]
	}{{"indexer", s}, {"zero Indexer", &zero}} {
		t.Run(st.name, func(t *testing.T) {
			tests := []struct {
				name  string
				query func() (int, error) // ranges over the result, counting
			}{
				{"ByIndex", func() (int, error) { seq, err := st.s.ByIndex("nope", "x"); return count2(seq), err }},
				{"IndexKeys", func() (int, error) { seq, err := st.s.IndexKeys("nope", "x"); return count(seq), err }},
				{"IndexValues", func() (int, error) { seq, err := st.s.IndexValues("nope"); return count(seq), err }},
				{"Index", func() (int, error) { seq, err := st.s.Index("nope", pod("a", "b")); return count2(seq), err }},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					n, err := tt.query()
					require.ErrorIs(t, err, ErrIndexNotFound)
					assert.Contains(t, err.Error(), `index "nope"`)
					assert.Zero(t, n)
				})
			}
		})
	}
	// An unknown value of a known index yields nothing.
	seq, err := s.ByIndex(nsIndex, "nope")
	require.NoError(t, err)
	assert.Empty(t, collectKeys(seq))
	// An index function failing on Index's argument: same, with ErrIndexFunc.
	s = newTestIndexer(failingIndex)
	seq, err = s.Index("failing", pod("a", "b", "bad=panic"))
	require.ErrorIs(t, err, ErrIndexFunc)
	assert.Zero(t, count2(seq))
}

// count and count2 range over an iterator and count what it yields.
func count[V any](seq iter.Seq[V]) (n int) {
	for range seq {
		n++
	}
	return n
}

func count2[K, V any](seq iter.Seq2[K, V]) (n int) {
	for range seq {
		n++
	}
	return n
}

var errBoom = errors.New("boom")

// failingIndex fails (or panics) on pods labelled bad=error (bad=panic).
var failingIndex = Index[*testPod]{Name: "failing", Func: func(dst []string, p *testPod) ([]string, error) {
	switch p.Labels["bad"] {
	case "error":
		return dst, errBoom
	case "panic":
		panic("index panic")
	}
	return append(dst, p.Namespace), nil
}}

// TestIndexerUserFuncErrors: key and index function errors and panics refuse
// the write and leave the store and indexes unchanged.
func TestIndexerUserFuncErrors(t *testing.T) {
	indexes := append(testIndexes(), failingIndex)
	keyFunc := func(p *testPod) (NamespacedKey, error) {
		switch p.Labels["badkey"] {
		case "error":
			return NamespacedKey{}, errBoom
		case "panic":
			panic("key panic")
		}
		return podKey(p)
	}
	s, err := NewIndexer(IndexerOptions[NamespacedKey, *testPod]{KeyFunc: keyFunc, Indexes: indexes})
	require.NoError(t, err)
	good := pod("ns", "a", "app=x")
	require.NoError(t, s.Add(good))
	model := map[NamespacedKey]*testPod{{"ns", "a"}: good}

	tests := []struct {
		name string
		op   func() error
		want []error
		msg  string
	}{
		{"index error on add", func() error { return s.Add(pod("ns", "b", "bad=error")) }, []error{ErrIndexFunc, errBoom}, `index "failing", key ns/b`},
		{"index panic on update", func() error { return s.Update(pod("ns", "a", "bad=panic")) }, []error{ErrIndexFunc}, `index "failing", key ns/a`},
		{"key error", func() error { return s.Add(pod("ns", "c", "badkey=error")) }, []error{ErrKeyFunc, errBoom}, ""},
		{"key panic", func() error { return s.Add(pod("ns", "c", "badkey=panic")) }, []error{ErrKeyFunc}, "key panic"},
		{"key error on delete", func() error { return s.Delete(pod("ns", "a", "badkey=error")) }, []error{ErrKeyFunc}, ""},
		{"replace refused", func() error {
			return s.Replace([]*testPod{pod("ns", "z"), pod("ns", "y", "bad=error")})
		}, []error{ErrIndexFunc}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op()
			for _, w := range tt.want {
				require.ErrorIs(t, err, w)
			}
			assert.Contains(t, err.Error(), tt.msg)
			checkIndexer(t, s, model, indexes)
		})
	}
}

// TestIndexerAddIndexes ports client-go's AddIndexers-after-data behaviour.
func TestIndexerAddIndexes(t *testing.T) {
	s := newTestIndexer(Index[*testPod]{Name: nsIndex, Func: nsIndexFunc})
	model := map[NamespacedKey]*testPod{}
	for i := range 300 {
		p := benchPod(i)
		require.NoError(t, s.Add(p))
		model[NamespacedKey{p.Namespace, p.Name}] = p
	}
	_, err := s.ByIndex(labelsIndex, "app=app-1")
	require.ErrorIs(t, err, ErrIndexNotFound)

	require.NoError(t, s.AddIndexes(Index[*testPod]{Name: labelsIndex, Func: labelsIndexFunc}))
	checkIndexer(t, s, model, testIndexes())

	// Conflicts and invalid indexes.
	require.ErrorIs(t, s.AddIndexes(Index[*testPod]{Name: nsIndex, Func: nsIndexFunc}), ErrIndexExists)
	dup := Index[*testPod]{Name: "d", Func: nsIndexFunc}
	require.ErrorIs(t, s.AddIndexes(dup, dup), ErrIndexExists)
	require.ErrorIs(t, s.AddIndexes(Index[*testPod]{Name: "nil"}), ErrInvalidOptions)

	// An index func failing on a stored object refuses the whole call.
	bad := pod("ns-0", "bad", "bad=error")
	require.NoError(t, s.Add(bad))
	model[NamespacedKey{"ns-0", "bad"}] = bad
	require.ErrorIs(t, s.AddIndexes(Index[*testPod]{Name: "ok", Func: nsIndexFunc}, failingIndex), ErrIndexFunc)
	_, err = s.ByIndex("ok", "ns-0")
	require.ErrorIs(t, err, ErrIndexNotFound)
	checkIndexer(t, s, model, testIndexes())

	// Writes keep working and use the new index.
	require.NoError(t, s.Update(pod("ns-0", "pod-1", "app=moved")))
	model[NamespacedKey{"ns-0", "pod-1"}] = pod("ns-0", "pod-1", "app=moved")
	got, _ := s.Get(NamespacedKey{"ns-0", "pod-1"})
	model[NamespacedKey{"ns-0", "pod-1"}] = got
	checkIndexer(t, s, model, testIndexes())
}

// TestIndexerWithoutIndexes: writes of an indexer without indexes hold no
// scratch buffer; indexes added later cover the objects written before and
// after, through every write path.
func TestIndexerWithoutIndexes(t *testing.T) {
	s := newTestIndexer()
	model := map[NamespacedKey]*testPod{}
	pods := make([]*testPod, 0, 100)
	for i := range 100 {
		p := benchPod(i)
		pods = append(pods, p)
		model[NamespacedKey{p.Namespace, p.Name}] = p
	}
	require.NoError(t, s.Replace(pods))
	require.NoError(t, s.Update(pod("ns-0", "pod-0", "app=x")))
	model[NamespacedKey{"ns-0", "pod-0"}], _ = s.Get(NamespacedKey{"ns-0", "pod-0"})
	require.NoError(t, s.Delete(pods[1]))
	delete(model, NamespacedKey{pods[1].Namespace, pods[1].Name})
	checkIndexer(t, s, model, nil)

	require.NoError(t, s.AddIndexes(testIndexes()...))
	checkIndexer(t, s, model, testIndexes())
	require.NoError(t, s.Update(pod("ns-0", "pod-0", "app=y")))
	model[NamespacedKey{"ns-0", "pod-0"}], _ = s.Get(NamespacedKey{"ns-0", "pod-0"})
	require.NoError(t, s.Add(pod("ns-1", "new", "app=z")))
	model[NamespacedKey{"ns-1", "new"}], _ = s.Get(NamespacedKey{"ns-1", "new"})
	checkIndexer(t, s, model, testIndexes())
}

// TestIndexerZeroValue: the zero Indexer is an empty, read-only store.
func TestIndexerZeroValue(t *testing.T) {
	var s Indexer[NamespacedKey, *testPod]
	assert.Equal(t, 0, s.Len())
	_, ok := s.Get(NamespacedKey{"a", "b"})
	assert.False(t, ok)
	assert.Empty(t, s.List())
	for range s.All() {
		t.Fatal("zero Indexer yielded an object")
	}
	for range s.Keys() {
		t.Fatal("zero Indexer yielded a key")
	}
	_, ok = s.DeleteKey(NamespacedKey{"a", "b"})
	assert.False(t, ok)
	assert.ErrorIs(t, s.Add(pod("a", "b")), ErrInvalidOptions)
	assert.ErrorIs(t, s.Update(pod("a", "b")), ErrInvalidOptions)
	assert.ErrorIs(t, s.Delete(pod("a", "b")), ErrInvalidOptions)
	assert.ErrorIs(t, s.Replace(nil), ErrInvalidOptions)
	assert.ErrorIs(t, s.AddIndexes(Index[*testPod]{Name: "x", Func: nsIndexFunc}), ErrInvalidOptions)
	_, err := s.ByIndex("x", "y")
	assert.ErrorIs(t, err, ErrIndexNotFound)
	_, err = s.IndexValues("x")
	assert.ErrorIs(t, err, ErrIndexNotFound)
}

// TestIndexerIteration: iterators are reusable, stop early, and chunk
// boundaries lose nothing.
func TestIndexerIteration(t *testing.T) {
	s := newTestIndexer(testIndexes()...)
	const n = 3*chunkSize + 5
	for i := range n {
		require.NoError(t, s.Add(benchPod(i*10))) // all in ns-0
	}
	seq, err := s.ByIndex(nsIndex, "ns-0")
	require.NoError(t, err)
	for range 2 { // reusable
		assert.Len(t, collectKeys(seq), n)
		assert.Len(t, collectKeys(s.All()), n)
	}
	count := 0
	for range seq {
		count++
		if count == chunkSize+1 {
			break
		}
	}
	assert.Equal(t, chunkSize+1, count)
	count = 0
	for range s.Keys() {
		count++
		if count == 3 {
			break
		}
	}
	assert.Equal(t, 3, count)
	vals, err := s.IndexValues(labelsIndex)
	require.NoError(t, err)
	assert.Len(t, collectStrings(vals), n+1+(n*10)/100+1) // pod=*, tier-0, app-*
}

// TestIndexerIterateWhileWriting: an object present for the whole iteration
// is yielded exactly once even when the iterating goroutine itself writes
// between chunks; a Replace during iteration finishes over the old set.
func TestIndexerIterateWhileWriting(t *testing.T) {
	s := newTestIndexer(testIndexes()...)
	const n = 1000
	for i := range n {
		require.NoError(t, s.Add(benchPod(i)))
	}
	seen := map[NamespacedKey]int{}
	i := n
	for k := range s.All() {
		seen[k]++
		if k.Name[len(k.Name)-1] == '7' { // delete some, add some
			_, _ = s.DeleteKey(k)
		}
		require.NoError(t, s.Add(benchPod(i)))
		i++
	}
	for j := range n {
		p := benchPod(j)
		assert.Equal(t, 1, seen[NamespacedKey{p.Namespace, p.Name}], p.Name)
	}
	for _, c := range seen {
		assert.Equal(t, 1, c)
	}

	var keys []string
	first := true
	for k := range s.All() {
		if first {
			require.NoError(t, s.Replace([]*testPod{pod("other", "x")}))
			first = false
		}
		keys = append(keys, k.String())
	}
	assert.NotContains(t, keys, "other/x")
	assert.Greater(t, len(keys), n/2)
	sort.Strings(keys)
	assert.Equal(t, []string{"other/x"}, collectKeys(s.All()))
}

// csvObj is a value type (not a pointer) stored under a string key; its
// index values are the comma-separated parts of vals.
type csvObj struct{ key, vals string }

// TestIndexerMultipleValuesSequence ports client-go's
// TestThreadSafeStoreIndexingFunctionsWithMultipleValues (and
// AddKeepsNonEmptySetPostDeleteFromIndex): objects moving between values of
// a multi-value index, step by step, with a value type and string keys.
func TestIndexerMultipleValuesSequence(t *testing.T) {
	s, err := NewIndexer(IndexerOptions[string, csvObj]{
		KeyFunc: func(o csvObj) (string, error) { return o.key, nil },
		Indexes: []Index[csvObj]{{Name: "csv", Func: func(dst []string, o csvObj) ([]string, error) {
			start := 0
			for i := 0; i <= len(o.vals); i++ {
				if i == len(o.vals) || o.vals[i] == ',' {
					dst = append(dst, o.vals[start:i])
					start = i + 1
				}
			}
			return dst, nil
		}}},
	})
	require.NoError(t, err)
	keys := func(v string) []string {
		seq, err := s.IndexKeys("csv", v)
		require.NoError(t, err)
		var out []string
		for k := range seq {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	steps := []struct {
		op            string // add, update, delete
		obj           csvObj
		foo, bar, baz []string
	}{
		{"add", csvObj{"key1", "foo"}, []string{"key1"}, nil, nil},
		{"add", csvObj{"key2", "bar"}, []string{"key1"}, []string{"key2"}, nil},
		{"update", csvObj{"key2", "foo,bar"}, []string{"key1", "key2"}, []string{"key2"}, nil},
		{"update", csvObj{"key1", "foo,bar"}, []string{"key1", "key2"}, []string{"key1", "key2"}, nil},
		{"add", csvObj{"key3", "foo,bar,baz"}, []string{"key1", "key2", "key3"}, []string{"key1", "key2", "key3"}, []string{"key3"}},
		{"update", csvObj{"key1", "foo"}, []string{"key1", "key2", "key3"}, []string{"key2", "key3"}, []string{"key3"}},
		{"update", csvObj{"key2", "bar"}, []string{"key1", "key3"}, []string{"key2", "key3"}, []string{"key3"}},
		{"delete", csvObj{"key1", ""}, []string{"key3"}, []string{"key2", "key3"}, []string{"key3"}},
		{"delete", csvObj{"key3", ""}, nil, []string{"key2"}, nil},
	}
	for i, st := range steps {
		switch st.op {
		case "add":
			require.NoError(t, s.Add(st.obj))
		case "update":
			require.NoError(t, s.Update(st.obj))
		case "delete":
			require.NoError(t, s.Delete(st.obj))
		}
		assert.Equal(t, st.foo, keys("foo"), "step %d foo", i)
		assert.Equal(t, st.bar, keys("bar"), "step %d bar", i)
		assert.Equal(t, st.baz, keys("baz"), "step %d baz", i)
	}
	vals, err := s.IndexValues("csv")
	require.NoError(t, err)
	assert.Equal(t, []string{"bar"}, collectStrings(vals))
	got, ok := s.Get("key2")
	assert.True(t, ok)
	assert.Equal(t, csvObj{"key2", "bar"}, got)
}

func TestIndexerIndexRef(t *testing.T) {
	s := newTestIndexer(testIndexes()...)
	for _, p := range benchPods(300) {
		require.NoError(t, s.Add(p))
	}
	byLabel := NewIndex(labelsIndex, labelsIndexFunc)

	// Binding fails only for an index the store does not have.
	_, err := s.IndexRef(NewIndex("nope", labelsIndexFunc))
	require.ErrorIs(t, err, ErrIndexNotFound)
	_, err = (&Indexer[NamespacedKey, *testPod]{}).IndexRef(byLabel)
	require.ErrorIs(t, err, ErrIndexNotFound, "the zero Indexer has no index")

	var zero IndexRef[NamespacedKey, *testPod]
	assert.Empty(t, slices.Collect(zero.Keys("x")), "the zero IndexRef yields nothing")
	assert.Empty(t, slices.Collect(zero.Values()))
	for range zero.ByValue("x") {
		t.Fatal("the zero IndexRef yields nothing")
	}

	ref, err := s.IndexRef(byLabel)
	require.NoError(t, err)
	want, err := s.IndexKeys(labelsIndex, "app=app-1")
	require.NoError(t, err)
	var got []NamespacedKey
	for k, p := range ref.ByValue("app=app-1") {
		assert.Equal(t, "app-1", p.Labels["app"])
		got = append(got, k)
	}
	assert.ElementsMatch(t, slices.Collect(want), got)
	assert.Len(t, got, 100)
	assert.ElementsMatch(t, got, slices.Collect(ref.Keys("app=app-1")))
	assert.Empty(t, slices.Collect(ref.Keys("app=none")))
	wantVals, err := s.IndexValues(labelsIndex)
	require.NoError(t, err)
	assert.ElementsMatch(t, slices.Collect(wantVals), slices.Collect(ref.Values()))
	assert.Len(t, slices.Collect(ref.Values()), 3+10+300) // app, tier, pod

	// The ref survives a relist, and an index added later binds once added.
	require.NoError(t, s.Replace(benchPods(100)))
	assert.Len(t, slices.Collect(ref.Keys("app=app-0")), 100)
	byNs := NewIndex("ns2", nsIndexFunc)
	_, err = s.IndexRef(byNs)
	require.ErrorIs(t, err, ErrIndexNotFound)
	require.NoError(t, s.AddIndexes(byNs))
	nsRef, err := s.IndexRef(byNs)
	require.NoError(t, err)
	nsWant, err := s.IndexKeys(nsIndex, "ns-3")
	require.NoError(t, err)
	assert.ElementsMatch(t, slices.Collect(nsWant), slices.Collect(nsRef.Keys("ns-3")))

	// No query allocates.
	for name, query := range map[string]func() int{
		"ByValue": func() int {
			n := 0
			for range ref.ByValue("app=app-0") {
				n++
			}
			return n
		},
		"Keys": func() int {
			n := 0
			for range ref.Keys("app=app-0") {
				n++
			}
			return n
		},
		"Values": func() int {
			n := 0
			for range ref.Values() {
				n++
			}
			return n - 1 - 10 // app=app-0, 10 tiers and 100 pod names
		},
	} {
		allocs := testing.AllocsPerRun(100, func() {
			if n := query(); n != 100 {
				t.Fatal(name, n)
			}
		})
		assert.Zero(t, allocs, "an IndexRef query allocates nothing: %s", name)
	}
}
