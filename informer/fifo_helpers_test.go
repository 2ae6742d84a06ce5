package informer

import (
	"errors"
	"iter"
	"maps"
	"slices"
	"sync"
)

// fifoObj is the FIFO tests' object: a name (the key) and a version.
type fifoObj struct {
	Name string
	V    int
}

var errBadKey = errors.New("bad key")

// fifoKey is the key func of the FIFO tests: the name; "bad" is an error and
// "panic" panics.
func fifoKey(o fifoObj) (string, error) {
	switch o.Name {
	case "bad":
		return "", errBadKey
	case "panic":
		panic("key func panic")
	}
	return o.Name, nil
}

// fakeKnown is a map-backed KnownObjects whose All yields in key order.
type fakeKnown struct {
	mu sync.Mutex
	m  map[string]fifoObj
}

func newFakeKnown(objs ...fifoObj) *fakeKnown {
	k := &fakeKnown{m: map[string]fifoObj{}}
	for _, o := range objs {
		k.m[o.Name] = o
	}
	return k
}

func (k *fakeKnown) Get(key string) (fifoObj, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	o, ok := k.m[key]
	return o, ok
}

func (k *fakeKnown) All() iter.Seq2[string, fifoObj] {
	return func(yield func(string, fifoObj) bool) {
		k.mu.Lock()
		keys := slices.Sorted(maps.Keys(k.m))
		snap := maps.Clone(k.m)
		k.mu.Unlock()
		for _, key := range keys {
			if !yield(key, snap[key]) {
				return
			}
		}
	}
}

// apply applies popped deltas as a consumer writing to its store would.
func (k *fakeKnown) apply(key string, ds Deltas[fifoObj]) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, d := range ds {
		if d.Type == Deleted {
			delete(k.m, key)
		} else {
			k.m[key] = d.Object
		}
	}
}

// queueSnapshot returns the queued keys in order and their deltas.
func (f *DeltaFIFO[K, T]) queueSnapshot() ([]K, map[K]Deltas[T], map[K]bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var order []K
	items := make(map[K]Deltas[T], len(f.items))
	initial := make(map[K]bool)
	for _, it := range f.bulk { // ahead of order, not in items
		order = append(order, it.Key)
		items[it.Key] = append(Deltas[T](nil), it.Deltas...)
		if it.IsInInitialList {
			initial[it.Key] = true
		}
	}
	if f.unindexed > f.order.head {
		f.indexLocked()
	}
	for seq := f.order.head; seq < f.order.tail; seq++ {
		e := f.order.at(seq)
		order = append(order, e.key)
		ds := Deltas[T]{e.first}
		items[e.key] = append(ds, e.more...)
		if e.initial {
			initial[e.key] = true
		}
		// A key is queued once, and maps to its entry.
		if s, ok := f.items[e.key]; !ok || s != seq {
			panic("items and order disagree")
		}
	}
	live := 0
	for _, s := range f.items {
		if s >= f.order.head {
			live++
		}
	}
	if len(items) != live+len(f.bulk) || len(order) != len(items) {
		panic("items and order disagree in size")
	}
	return order, items, initial
}
