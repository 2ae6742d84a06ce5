package informer

import (
	"fmt"
	"slices"
)

// The informer's lists: the transformingStore takes them page by page (it is
// a [ListReceiver]). Each page is compared with the cache first (see
// [Options.ObjectVersion]), so the objects the cache holds unchanged are
// dropped before the transform runs; the rest are transformed, keyed once,
// and added to the queue's list, which the commit applies as one Replace.

// BeginList implements [ListReceiver].
func (s *transformingStore[K, T]) BeginList() ListBuilder[T] {
	return &transformList[K, T]{s: s, fl: s.fifo.newList()}
}

// Replace transforms every listed object; one that fails the transform or
// the key function is reported and left out of the list, so one bad object
// cannot block every relist. (The known object under its key, if any, is
// then tombstoned: the cache shows only what it can name and index.) objs
// belongs to the source (it may be a cached snapshot) and is never written
// to.
func (s *transformingStore[K, T]) Replace(objs []T, version string) error {
	l := s.BeginList()
	if err := l.AddPage(objs); err != nil {
		return err
	}
	return l.Commit(version)
}

// transformList is the informer's [ListBuilder].
type transformList[K comparable, T any] struct {
	s  *transformingStore[K, T]
	fl *fifoList[K, T]
	// Scratch reused between pages: a page's keyable objects and keys.
	objs []T
	keys []K
}

// AddPage never fails: objects that fail the transform or the key function
// are reported and skipped.
func (l *transformList[K, T]) AddPage(items []T) error {
	s, fl := l.s, l.fl
	switch {
	case s.transform != nil && !fl.compare:
		for _, obj := range items {
			l.addTransformed(obj)
		}
	case !fl.compare:
		l.addKeyed(items)
	default:
		l.addCompared(items)
	}
	return nil
}

// addKeyed adds items, keyed as listed, straight into the queue's list (the
// key function runs once per object). A page that is the whole list so far
// is not copied.
func (l *transformList[K, T]) addKeyed(items []T) {
	fl := l.fl
	first := len(fl.objs) == 0
	fl.growKeys(len(items))
	var bad []int
	for i, obj := range items {
		k, err := l.s.fifo.keyOf(obj)
		if err != nil {
			l.skipped(err)
			bad = append(bad, i)
			continue
		}
		fl.pushKey(k)
	}
	if first && len(bad) == 0 {
		// Full slice expression: a later page's append copies, never
		// writing into the source's array.
		fl.objs = items[:len(items):len(items)]
		return
	}
	fl.objs = slices.Grow(fl.objs, len(items)-len(bad))
	for i, obj := range items {
		if len(bad) > 0 && bad[0] == i {
			bad = bad[1:]
			continue
		}
		fl.objs = append(fl.objs, obj)
	}
}

// addCompared keys the objects as listed, compares them with the cache and
// adds those that changed (transformed, if there is a transform: the key of
// a listed object must then be that of its transformed self).
func (l *transformList[K, T]) addCompared(items []T) {
	s, fl := l.s, l.fl
	l.objs, l.keys = l.objs[:0], l.keys[:0]
	for _, obj := range items {
		k, err := s.fifo.keyOf(obj)
		if err != nil {
			l.skipped(err)
			continue
		}
		l.objs = append(l.objs, obj)
		l.keys = append(l.keys, k)
	}
	same := fl.unchanged(l.objs, l.keys)
	for i, obj := range l.objs {
		switch {
		case same != nil && same[i]:
		case s.transform == nil:
			fl.push(obj, l.keys[i])
		default:
			l.addTransformed(obj)
		}
	}
	clear(l.objs)
	clear(l.keys)
}

// addTransformed transforms obj, keys the result and adds it to the list,
// or reports why it cannot.
func (l *transformList[K, T]) addTransformed(obj T) {
	t, err := l.s.apply(obj)
	if err == nil {
		var k K
		if k, err = l.s.fifo.keyOf(t); err == nil {
			l.fl.push(t, k)
			return
		}
	}
	l.skipped(err)
}

func (l *transformList[K, T]) skipped(err error) {
	l.s.inf.report(ErrorClassStore, fmt.Errorf("informer %q: list: object skipped: %w", l.s.inf.name, err))
}

// Commit applies the list as one Replace and records its version.
func (l *transformList[K, T]) Commit(version string) error {
	if err := l.fl.Commit(version); err != nil {
		return err
	}
	l.s.inf.versions.record(version)
	return nil
}
