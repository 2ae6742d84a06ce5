package memory

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/internal/safecall"
)

// entry is the current state of one live object. key and sortKey never
// change; obj and modRev are guarded by Store.mu.
type entry[K comparable, T any] struct {
	key     K
	sortKey string
	obj     T
	modRev  int64
	deleted bool // guarded by Store.mu
}

// Store is a concurrent, versioned collection of T keyed by K that implements
// [informer.Source]. Use [New]; the zero value is not usable. All methods are
// safe for concurrent use. Objects given to Put are stored and handed out as
// they are, shared and never copied: treat them as read-only.
type Store[K comparable, T any] struct {
	opts Options[K, T]
	// incarnation tells this store's data from any other store's, in this
	// process or another: its versions mean nothing elsewhere (see
	// [Store.SnapshotIdentity]). Set by New, never changed.
	incarnation string

	// mu guards every field below, and the obj and modRev of every entry.
	mu sync.Mutex
	// rev is the current revision; compactRev the oldest one still served.
	// The history holds exactly the records compactRev+1 .. rev.
	rev, compactRev int64
	objects         map[K]*entry[K, T]
	hist            history[K, T]
	// notify, when not nil, is closed (and reset) by the next change that
	// watchers must look at. Watchers create it when they go idle.
	notify chan struct{}
	// order caches the live entries in key order; valid while orderGen
	// equals structGen, which every create and delete increments.
	order               []*entry[K, T]
	orderGen, structGen uint64
	// created lists the entries created since order was cached, so the next
	// order is a merge rather than a full sort; nil with createdOverflow
	// when there were too many to be worth tracking.
	created         []*entry[K, T]
	createdOverflow bool
	// snaps caches recent sorted snapshots for lists and their pages.
	snaps snapshotCache[T]
	// watchers is the set of open watches; wg counts their goroutines.
	watchers map[*watcher[K, T]]struct{}
	wg       sync.WaitGroup
	closed   bool
	// Test aids.
	failList, failWatch error
	delay               time.Duration
}

// New returns an empty store at version "1".
//
// Possible errors: [informer.ErrInvalidOptions] when opts fails validation.
func New[K comparable, T any](opts Options[K, T]) (*Store[K, T], error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store[K, T]{
		opts:        opts,
		incarnation: randomID(),
		rev:         1,
		compactRev:  1,
		objects:     make(map[K]*entry[K, T]),
		watchers:    make(map[*watcher[K, T]]struct{}),
	}
	s.hist.max = opts.HistorySize
	return s, nil
}

// Put creates or replaces the object named by KeyFunc(obj) and returns the
// new store version, which is also the object's mod version. Watchers see an
// Added event for a new key and a Modified one otherwise, even when obj is
// equal to the stored object.
//
// Possible errors: [informer.ErrKeyFunc] (nothing was written).
func (s *Store[K, T]) Put(obj T) (version string, err error) {
	key, err := s.keyOf(obj)
	if err != nil {
		return "", err
	}
	// sortKey may call user code (String): compute it outside the lock, and
	// only for keys that are new when looked at.
	var sortKey string
	haveSortKey := s.opts.Compare != nil
	s.mu.Lock()
	for {
		if _, ok := s.objects[key]; ok || haveSortKey {
			break
		}
		s.mu.Unlock()
		sortKey, haveSortKey = defaultSortKey(key), true
		s.mu.Lock()
	}
	s.rev++
	rec := record[K, T]{rev: s.rev, version: formatVersion(s.rev), key: key, obj: obj}
	if e, ok := s.objects[key]; ok {
		rec.typ, rec.sortKey = informer.EventModified, e.sortKey
		rec.prev, rec.prevRev, rec.hadPrev = e.obj, e.modRev, true
		e.obj, e.modRev = obj, s.rev
	} else {
		rec.typ, rec.sortKey = informer.EventAdded, sortKey
		e := &entry[K, T]{key: key, sortKey: sortKey, obj: obj, modRev: s.rev}
		s.objects[key] = e
		s.structGen++
		s.trackCreatedLocked(e)
	}
	s.appendLocked(rec)
	s.mu.Unlock()
	return rec.version, nil
}

// Delete removes the object with the given key. It returns the new store
// version and true, or the unchanged current version and false when the key
// was absent (no revision is used then). Watchers see a Deleted event
// carrying the object's last state.
func (s *Store[K, T]) Delete(key K) (version string, existed bool) {
	s.mu.Lock()
	e, ok := s.objects[key]
	if !ok {
		v := s.rev
		s.mu.Unlock()
		return formatVersion(v), false
	}
	s.rev++
	delete(s.objects, key)
	e.deleted = true
	s.structGen++
	rec := record[K, T]{
		rev: s.rev, version: formatVersion(s.rev), typ: informer.EventDeleted, key: key, sortKey: e.sortKey,
		obj: e.obj, prev: e.obj, prevRev: e.modRev, hadPrev: true,
	}
	s.appendLocked(rec)
	s.mu.Unlock()
	return rec.version, true
}

// Get returns the object stored under key and its mod version (the version
// of the write that last changed it), or false when there is none.
func (s *Store[K, T]) Get(key K) (obj T, version string, ok bool) {
	s.mu.Lock()
	e, ok := s.objects[key]
	if ok {
		obj, version = e.obj, formatVersion(e.modRev)
	}
	s.mu.Unlock()
	return obj, version, ok
}

// Len returns the number of objects in the store.
func (s *Store[K, T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.objects)
}

// Version returns the current store version.
func (s *Store[K, T]) Version() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return formatVersion(s.rev)
}

// Compact drops the history up to version: afterwards lists at versions
// older than version, continue tokens of such lists, and watches from them
// fail with [informer.ErrExpired]; version itself is still served. Compacting
// to a version already compacted is a no-op. Open watchers that have not yet
// read the dropped changes get an Error event wrapping ErrExpired.
//
// Possible errors: [informer.ErrInvalidOptions] (not a version of this
// store), [informer.ErrVersionTooLarge] (newer than the current version).
func (s *Store[K, T]) Compact(version string) error {
	v, err := parseVersion(version)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v > s.rev {
		return fmt.Errorf("memory: compact to %d, current %d: %w", v, s.rev, informer.ErrVersionTooLarge)
	}
	s.compactLocked(v)
	return nil
}

// CompactAll drops the whole history: only the current version is served
// afterwards. See [Store.Compact].
func (s *Store[K, T]) CompactAll() {
	s.mu.Lock()
	s.compactLocked(s.rev)
	s.mu.Unlock()
}

// compactLocked drops the records up to v and wakes watchers, some of which
// may now be expired.
func (s *Store[K, T]) compactLocked(v int64) {
	if v <= s.compactRev {
		return
	}
	for s.hist.len() > 0 && s.hist.at(0).rev <= v {
		s.hist.dropOldest()
	}
	s.compactRev = v
	s.snaps.dropOlder(v)
	s.wakeLocked()
}

// Close ends every open watch (their channels are closed after the events
// already buffered) and waits for the watch goroutines to exit. Watch then
// fails with [informer.ErrClosed]; writes, reads and lists keep working.
// Close is idempotent.
func (s *Store[K, T]) Close() {
	s.mu.Lock()
	s.closed = true
	ws := s.watcherListLocked()
	s.mu.Unlock()
	for _, w := range ws {
		w.stream.Stop()
	}
	s.wg.Wait()
}

// appendLocked records a change and wakes the watchers.
func (s *Store[K, T]) appendLocked(rec record[K, T]) {
	if dropped, rev := s.hist.push(rec); dropped {
		s.compactRev = rev
		s.snaps.dropOlder(rev)
	}
	s.wakeLocked()
}

// trackCreatedLocked remembers a new entry for the next order merge.
func (s *Store[K, T]) trackCreatedLocked(e *entry[K, T]) {
	if s.createdOverflow {
		return
	}
	if len(s.created) >= max(1024, len(s.order)/4) {
		s.created, s.createdOverflow = nil, true
		return
	}
	s.created = append(s.created, e)
}

// wakeLocked wakes every idle watcher.
func (s *Store[K, T]) wakeLocked() {
	if s.notify != nil {
		close(s.notify)
		s.notify = nil
	}
}

// keyOf calls the user key function, turning an error or a panic into an
// error wrapping informer.ErrKeyFunc.
func (s *Store[K, T]) keyOf(obj T) (K, error) {
	key, err := safecall.Call(s.opts.KeyFunc, obj)
	if err != nil {
		return key, fmt.Errorf("memory: %w: %w", informer.ErrKeyFunc, err)
	}
	return key, nil
}

// defaultSortKey is the string form ordering keys when Options.Compare is
// nil.
func defaultSortKey[K comparable](key K) string {
	switch k := any(key).(type) {
	case string:
		return k
	case fmt.Stringer:
		return k.String()
	default:
		return fmt.Sprint(key)
	}
}

// formatVersion renders a revision as a version string.
func formatVersion(rev int64) string { return strconv.FormatInt(rev, 10) }

// parseVersion parses a version string of this store.
//
// Possible errors: [informer.ErrInvalidOptions].
func parseVersion(v string) (int64, error) {
	rev, err := strconv.ParseInt(v, 10, 64)
	if err != nil || rev < 0 {
		return 0, fmt.Errorf("memory: version %q is not a revision: %w", v, informer.ErrInvalidOptions)
	}
	return rev, nil
}
