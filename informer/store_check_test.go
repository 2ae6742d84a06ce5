package informer

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"testing"
)

// expectedIndex computes, from the model, value → sorted keys for one index.
func expectedIndex(model map[NamespacedKey]*testPod, ix Index[*testPod]) map[string][]string {
	out := map[string][]string{}
	for k, p := range model {
		vals, err := ix.Func(nil, p)
		if err != nil {
			panic(fmt.Sprintf("model holds an object its index %q rejects: %v", ix.Name, err))
		}
		seen := map[string]bool{}
		for _, v := range vals {
			if seen[v] {
				continue
			}
			seen[v] = true
			out[v] = append(out[v], k.String())
		}
	}
	for _, ks := range out {
		sort.Strings(ks)
	}
	return out
}

// checkIndexer verifies that s holds exactly model, that every index equals
// what the model's objects imply, and the internal invariants (refs and
// bucket membership agree, no empty bucket).
func checkIndexer(tb testing.TB, s *Indexer[NamespacedKey, *testPod], model map[NamespacedKey]*testPod, indexes []Index[*testPod]) {
	tb.Helper()
	if got := s.Len(); got != len(model) {
		tb.Fatalf("Len = %d, model %d", got, len(model))
	}
	for k, p := range model {
		got, ok := s.Get(k)
		if !ok || got != p {
			tb.Fatalf("Get(%v) = %v, %v; want %v", k, got, ok, p)
		}
	}
	seen := map[NamespacedKey]bool{}
	for k, p := range s.All() {
		if seen[k] {
			tb.Fatalf("All yielded %v twice", k)
		}
		seen[k] = true
		if model[k] != p {
			tb.Fatalf("All yielded %v = %v; model %v", k, p, model[k])
		}
	}
	if len(seen) != len(model) {
		tb.Fatalf("All yielded %d keys, model %d", len(seen), len(model))
	}
	var keys []NamespacedKey
	for k := range s.Keys() {
		keys = append(keys, k)
	}
	if len(keys) != len(model) {
		tb.Fatalf("Keys yielded %d, model %d", len(keys), len(model))
	}
	list := s.List()
	if len(list) != len(model) {
		tb.Fatalf("List has %d, model %d", len(list), len(model))
	}
	for _, ix := range indexes {
		want := expectedIndex(model, ix)
		vals, err := s.IndexValues(ix.Name)
		if err != nil {
			tb.Fatalf("IndexValues(%q): %v", ix.Name, err)
		}
		gotVals := collectStrings(vals)
		wantVals := slices.Sorted(maps.Keys(want))
		if !slices.Equal(gotVals, wantVals) {
			tb.Fatalf("IndexValues(%q) = %v; want %v", ix.Name, gotVals, wantVals)
		}
		for v, wantKeys := range want {
			seq, err := s.ByIndex(ix.Name, v)
			if err != nil {
				tb.Fatalf("ByIndex(%q, %q): %v", ix.Name, v, err)
			}
			for k, p := range seq {
				if model[k] != p {
					tb.Fatalf("ByIndex(%q, %q) yielded %v = %v; model %v", ix.Name, v, k, p, model[k])
				}
			}
			if got := collectKeys(seq); !slices.Equal(got, wantKeys) {
				tb.Fatalf("ByIndex(%q, %q) = %v; want %v", ix.Name, v, got, wantKeys)
			}
			kseq, _ := s.IndexKeys(ix.Name, v)
			var got []string
			for k := range kseq {
				got = append(got, k.String())
			}
			sort.Strings(got)
			if !slices.Equal(got, wantKeys) {
				tb.Fatalf("IndexKeys(%q, %q) = %v; want %v", ix.Name, v, got, wantKeys)
			}
		}
	}
	checkInternals(tb, s)
}

// checkInternals verifies refs ⇔ membership and that no bucket is empty.
func checkInternals(tb testing.TB, s *Indexer[NamespacedKey, *testPod]) {
	tb.Helper()
	s.mu.RLock()
	defer s.mu.RUnlock()
	defs := s.defs.Load()
	st := s.st.Load()
	if len(st.indexes) != len(defs.list) {
		tb.Fatalf("%d index tables for %d indexes", len(st.indexes), len(defs.list))
	}
	refCount := 0
	for e := range st.entries.All() {
		k := e.key
		if e.obj(st.rep) == nil {
			tb.Fatalf("entry %v holds no object", k)
		}
		for i, b := range e.refs {
			if i > 0 && e.refs[i-1].ord > b.ord {
				tb.Fatalf("refs of %v not ordered by index", k)
			}
			if st.indexes[b.ord].Get(b.value) != b {
				tb.Fatalf("entry %v refers to a bucket %q not in index %d", k, b.value, b.ord)
			}
			in := b.one.Load() == e
			if set := b.set.Load(); set != nil {
				in = set.Has(e)
			}
			if !in {
				tb.Fatalf("entry %v not a member of its bucket %q", k, b.value)
			}
		}
		refCount += len(e.refs)
	}
	members := 0
	for ord, idx := range st.indexes {
		for b := range idx.All() {
			if int(b.ord) != ord {
				tb.Fatalf("bucket %q/%d filed under index %d", b.value, b.ord, ord)
			}
			if b.seq.Load()&1 != 0 || b.pending != 0 {
				tb.Fatalf("bucket %q: seq %d, pending %d", b.value, b.seq.Load(), b.pending)
			}
			size := 0
			if set := b.set.Load(); set != nil {
				if b.one.Load() != nil {
					tb.Fatalf("bucket %q has both one and a set", b.value)
				}
				size = set.Len()
			} else if b.one.Load() != nil {
				size = 1
			}
			if size == 0 || size != int(b.n) {
				tb.Fatalf("bucket %q: %d members, n %d", b.value, size, b.n)
			}
			members += size
		}
	}
	if members != refCount {
		tb.Fatalf("%d bucket memberships, %d refs", members, refCount)
	}
}
