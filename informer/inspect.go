package informer

import (
	"encoding/json"
	"fmt"
	"iter"
	"reflect"
	"time"
)

// Inspector is the read-only, type-erased view of an informer that tools
// such as a debug page show (see package informer/debughttp): one interface
// for informers of every key and object type. *[SharedInformer] implements
// it; [Group.Inspectors] lists a group's. Its methods never write to the
// informer, never wait for the source or a handler, and are safe for
// concurrent use.
type Inspector interface {
	// Health returns [SharedInformer.Health].
	Health() Health
	// Types names the key and object types, as "K → T" with Go's %v
	// formatting of the types (for example "string → *main.Endpoint").
	Types() string
	// IndexStats returns each index's name and number of distinct values,
	// in index order.
	IndexStats() []IndexStat
	// ObjectJSON returns the cached object whose key, formatted with %v,
	// is key, encoded with encoding/json. found is false if there is none.
	// Keys of type string and [NamespacedKey] are looked up directly;
	// others by scanning the keys.
	//
	// Possible errors: the object's JSON encoding failed.
	ObjectJSON(key string) (data []byte, found bool, err error)
	// FormattedKeys yields the key of every cached object formatted with
	// %v (the form ObjectJSON takes), in no specified order. It reads as
	// [Lister.Keys] does: weakly consistent, without locks (but for waiting
	// out a relist being applied), holding nothing between keys. A pass
	// over n keys costs O(n) time and O(1) memory, and allocates nothing
	// per key for string keys, one short-lived string per key for others.
	// The iterator may be reused.
	FormattedKeys() iter.Seq[string]
	// StuckHandlerThreshold returns [Options.StuckHandlerThreshold] as
	// defaulted: a handler call running this long is reported stuck (and
	// counted in [HandlerHealth.StuckCalls]); 0 when stuck calls are
	// never reported.
	StuckHandlerThreshold() time.Duration
}

// IndexStat describes one index of a cache.
type IndexStat struct {
	// Name is the index's name.
	Name string `json:"name"`
	// Values is the number of distinct values (buckets) the index holds.
	Values int `json:"values"`
}

var _ Inspector = (*SharedInformer[string, int])(nil)

// Types implements [Inspector].
func (inf *SharedInformer[K, T]) Types() string {
	return fmt.Sprintf("%v → %v", reflect.TypeFor[K](), reflect.TypeFor[T]())
}

// IndexStats implements [Inspector]; a zero SharedInformer has none.
func (inf *SharedInformer[K, T]) IndexStats() []IndexStat {
	if inf.indexer == nil {
		return nil
	}
	return inf.indexer.IndexStats()
}

// ObjectJSON implements [Inspector].
func (inf *SharedInformer[K, T]) ObjectJSON(key string) ([]byte, bool, error) {
	obj, ok := findByFormattedKey(inf.Lister(), key)
	if !ok {
		return nil, false, nil
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, true, fmt.Errorf("informer %q: object %s: %w", inf.name, key, err)
	}
	return data, true, nil
}

// FormattedKeys implements [Inspector]; a zero SharedInformer has none.
func (inf *SharedInformer[K, T]) FormattedKeys() iter.Seq[string] {
	keys := inf.Lister().Keys()
	var format func(K) string
	switch any(*new(K)).(type) {
	case string:
		format = func(k K) string { return any(k).(string) }
	case NamespacedKey:
		format = func(k K) string { return any(k).(NamespacedKey).String() }
	default:
		format = func(k K) string { return fmt.Sprint(k) }
	}
	return func(yield func(string) bool) {
		for k := range keys {
			if !yield(format(k)) {
				return
			}
		}
	}
}

// StuckHandlerThreshold implements [Inspector].
func (inf *SharedInformer[K, T]) StuckHandlerThreshold() time.Duration { return inf.stuckAt }

// findByFormattedKey finds the object whose key formats (%v) as key.
func findByFormattedKey[K comparable, T any](l Lister[K, T], key string) (T, bool) {
	switch any(*new(K)).(type) {
	case string:
		return l.Get(any(key).(K))
	case NamespacedKey:
		nk := NamespacedKey{Name: key}
		for i := range len(key) {
			if key[i] == '/' {
				nk = NamespacedKey{Namespace: key[:i], Name: key[i+1:]}
				break
			}
		}
		return l.Get(any(nk).(K))
	}
	for k, obj := range l.All() {
		if fmt.Sprint(k) == key {
			return obj, true
		}
	}
	var zero T
	return zero, false
}

// IndexStats returns each index's name and number of distinct values, in
// index order, read under one short read lock.
func (s *Indexer[K, T]) IndexStats() []IndexStat {
	s.mu.RLock() // so that defs matches the state
	defer s.mu.RUnlock()
	defs := s.defs.Load()
	if defs == nil {
		return nil // a zero Indexer
	}
	st := s.st.Load()
	stats := make([]IndexStat, len(defs.list))
	for i, idx := range defs.list {
		stats[i] = IndexStat{Name: idx.Name, Values: st.indexes[i].Len()}
	}
	return stats
}
