package compat

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"strings"

	"k8s.io/client-go/tools/cache"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// errReadOnly refuses writes through [Informer.GetIndexer].
var errReadOnly = errors.New("compat: the informer's cache is read-only; it is written by the informer only")

// store is the cache.Indexer view of the engine's cache. Keys are
// client-go's "namespace/name" strings, parsed without allocation.
type store struct{ inf *Informer }

var _ cache.Indexer = (*store)(nil)

func (s *store) lister() informer.Lister[Key, k8s.Object] { return s.inf.eng.Lister() }

// parseKey turns "namespace/name" or "name" into a Key.
func parseKey(key string) Key {
	if ns, name, ok := strings.Cut(key, "/"); ok {
		return Key{Namespace: ns, Name: name}
	}
	return Key{Name: key}
}

// keyOf returns the key of obj, a k8s.Object or a tombstone.
func keyOf(obj any) (Key, error) {
	switch o := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		return parseKey(o.Key), nil
	case k8s.Object:
		return k8s.Key(o)
	}
	return Key{}, fmt.Errorf("compat: %T has no object metadata", obj)
}

func (s *store) Add(any) error               { return errReadOnly }
func (s *store) Update(any) error            { return errReadOnly }
func (s *store) Delete(any) error            { return errReadOnly }
func (s *store) Replace([]any, string) error { return errReadOnly }
func (s *store) Resync() error               { return errReadOnly }

// Bookmark does nothing: the engine records versions itself.
func (s *store) Bookmark(string) {}

// LastStoreSyncResourceVersion returns the informer's last version.
func (s *store) LastStoreSyncResourceVersion() string { return s.inf.LastSyncResourceVersion() }

// List returns every cached object, as one snapshot.
func (s *store) List() []any {
	objs := s.lister().List()
	out := make([]any, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}

// ListKeys returns every key, as "namespace/name".
func (s *store) ListKeys() []string {
	out := make([]string, 0, s.lister().Len())
	for k := range s.lister().Keys() {
		out = append(out, k.String())
	}
	return out
}

func (s *store) Get(obj any) (any, bool, error) {
	k, err := keyOf(obj)
	if err != nil {
		return nil, false, cache.KeyError{Obj: obj, Err: err}
	}
	o, ok := s.lister().Get(k)
	if !ok {
		return nil, false, nil
	}
	return o, true, nil
}

func (s *store) GetByKey(key string) (any, bool, error) {
	o, ok := s.lister().Get(parseKey(key))
	if !ok {
		return nil, false, nil
	}
	return o, true, nil
}

// Index returns the objects sharing an index value with obj.
func (s *store) Index(indexName string, obj any) ([]any, error) {
	o, ok := obj.(k8s.Object)
	if !ok {
		return nil, fmt.Errorf("compat: index %q: %T has no object metadata", indexName, obj)
	}
	seq, err := s.lister().Index(indexName, o)
	if err != nil {
		return nil, err
	}
	return objects(seq), nil
}

func (s *store) IndexKeys(indexName, indexedValue string) ([]string, error) {
	seq, err := s.lister().IndexKeys(indexName, indexedValue)
	if err != nil {
		return nil, err
	}
	var out []string
	for k := range seq {
		out = append(out, k.String())
	}
	return out, nil
}

func (s *store) ListIndexFuncValues(indexName string) []string {
	seq, err := s.lister().IndexValues(indexName)
	if err != nil {
		return nil
	}
	var out []string
	for v := range seq {
		out = append(out, v)
	}
	return out
}

func (s *store) ByIndex(indexName, indexedValue string) ([]any, error) {
	seq, err := s.lister().ByIndex(indexName, indexedValue)
	if err != nil {
		return nil, err
	}
	return objects(seq), nil
}

// GetIndexers returns a copy of the index functions.
func (s *store) GetIndexers() cache.Indexers {
	s.inf.mu.Lock()
	defer s.inf.mu.Unlock()
	return maps.Clone(s.inf.indexers)
}

func (s *store) AddIndexers(newIndexers cache.Indexers) error { return s.inf.AddIndexers(newIndexers) }

// objects collects the objects of seq, for the methods that return a slice.
func objects[K any](seq iter.Seq2[K, k8s.Object]) []any {
	var out []any
	for _, v := range seq {
		out = append(out, v)
	}
	return out
}
