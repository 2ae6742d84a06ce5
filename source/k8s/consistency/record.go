package consistency

import (
	"strconv"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ginformer/ginformer/informer"
)

// version is a resourceVersion as written (rv) and as a number (n), for
// comparing: the API server's resourceVersions are decimal integers.
type version struct {
	rv string
	n  uint64
}

// parseVersion reads rv as a number; ok is false for a resourceVersion that
// is not a positive decimal integer.
func parseVersion(rv string) (version, bool) {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil || n == 0 {
		return version{}, false
	}
	return version{rv: rv, n: n}, true
}

// pendingDelete is an object this writer deleted, by UID; after is the last
// version of it the writer knew, which the cache must reach first (else the
// cache may not have the object yet, and would add it later).
type pendingDelete struct {
	uid   types.UID
	after uint64
}

// keyVersion is one recorded version, in the order of recording.
type keyVersion struct {
	key informer.NamespacedKey
	n   uint64
}

// record is what one Writer wrote that its informer's cache may not show
// yet. Every entry is dropped once the cache is known to show it: a version
// once the cache has applied it (seen reaches it), a delete once the cache
// no longer holds the object. It does not log and calls no user code.
// Its zero value is not usable: see newRecord.
type record struct {
	// gone reports whether the cache no longer holds the object of uid
	// under key (the informer's Lister, lock-free).
	gone func(key informer.NamespacedKey, uid types.UID) bool

	// seen is the highest version the cache is known to have applied: the
	// version of an object the writer's handler was told of, or one a
	// wait ended at.
	seen atomic.Uint64
	// front is order[head].n, 0 when order is empty: the handler takes mu
	// to prune only once seen reaches it.
	front atomic.Uint64
	// deleting is len(deletes): the handler takes mu for a key only while
	// some delete is pending.
	deleting atomic.Int64
	// waiting counts the reads waiting for a delete (a delete they
	// awaited may have been replaced in deletes since): while any does,
	// every change wakes them.
	waiting atomic.Int64

	// mu guards the fields below. It is held for map updates only, never
	// while waiting; gone is called under it (it takes no lock).
	mu sync.Mutex
	// versions: per key, the highest version written and not yet seen.
	versions map[informer.NamespacedKey]version
	// deletes: per key, the last object deleted and still in the cache
	// (as far as the record knows).
	deletes map[informer.NamespacedKey]pendingDelete
	// order holds the versions recorded, from order[head] on, in the order
	// they were recorded (which is their order but for writes that
	// returned concurrently); pruning pops it while seen has passed the
	// front.
	order []keyVersion
	head  int
	// stale counts the entries of order whose key has a later version
	// since (compactLocked drops them when they are most of order).
	stale int
	// highest is the highest version ever recorded (a List waits for it).
	highest version
	// changed is closed, and reset to nil, when an event touches a key
	// with a pending delete: the waiters for deletes look again. Made by a
	// waiter that needs it.
	changed chan struct{}
}

func newRecord(gone func(informer.NamespacedKey, types.UID) bool) *record {
	return &record{
		gone:     gone,
		versions: make(map[informer.NamespacedKey]version),
		deletes:  make(map[informer.NamespacedKey]pendingDelete),
	}
}

// wrote records that the object under key is at version v, written by this
// writer. A delete recorded for key is dropped: a write of key succeeded
// after it, so the deleted object is gone from the API, and the cache will
// have dropped it once it has applied v.
func (r *record) wrote(key informer.NamespacedKey, v version) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropDeleteLocked(key)
	r.addVersionLocked(key, v)
	r.pruneLocked()
}

// deleted records that this writer deleted the object of uid under key,
// last known at version after (its version just before the delete).
func (r *record) deleted(key informer.NamespacedKey, uid types.UID, after version) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addVersionLocked(key, after)
	if after.n <= r.seen.Load() && r.gone(key, uid) {
		// Applied already: the handler's look at key came before this.
		r.dropDeleteLocked(key)
	} else {
		if _, ok := r.deletes[key]; !ok {
			r.deleting.Add(1)
		}
		r.deletes[key] = pendingDelete{uid: uid, after: after.n}
	}
	r.pruneLocked()
}

// addVersionLocked records v for key unless the cache has seen it.
func (r *record) addVersionLocked(key informer.NamespacedKey, v version) {
	if v.n > r.highest.n {
		r.highest = v
	}
	if v.n <= r.seen.Load() {
		return
	}
	if old, ok := r.versions[key]; ok {
		if old.n >= v.n {
			return
		}
		r.stale++ // old's entry in order
	}
	r.versions[key] = v
	r.order = append(r.order, keyVersion{key: key, n: v.n})
	if r.head == len(r.order)-1 {
		r.front.Store(v.n)
	}
	if r.stale > 64 && r.stale*2 > len(r.order)-r.head {
		r.compactLocked()
	}
}

// compactLocked drops the stale entries of order (versions since replaced
// by a later one of their key), keeping the others in their order: order
// then holds one entry per key in versions, so a key written many times
// while the cache does not advance costs one entry.
func (r *record) compactLocked() {
	live := r.order[:0]
	for _, kv := range r.order[r.head:] {
		if r.versions[kv.key].n == kv.n {
			live = append(live, kv)
		}
	}
	clear(r.order[len(live):])
	r.order, r.head, r.stale = live, 0, 0
	if len(live) > 0 {
		r.front.Store(live[0].n)
	} else {
		r.front.Store(0)
	}
}

// dropDeleteLocked forgets the delete pending for key, if any.
func (r *record) dropDeleteLocked(key informer.NamespacedKey) {
	if _, ok := r.deletes[key]; ok {
		delete(r.deletes, key)
		r.deleting.Add(-1)
	}
}

// pruneLocked drops the versions the cache has seen, in the order recorded,
// and the deletes among their keys the cache has applied.
func (r *record) pruneLocked() {
	seen := r.seen.Load()
	for r.head < len(r.order) && r.order[r.head].n <= seen {
		kv := r.order[r.head]
		r.order[r.head] = keyVersion{}
		r.head++
		if v, ok := r.versions[kv.key]; ok && v.n == kv.n {
			delete(r.versions, kv.key)
		} else {
			r.stale--
		}
		if d, ok := r.deletes[kv.key]; ok && d.after <= seen && r.gone(kv.key, d.uid) {
			r.dropDeleteLocked(kv.key)
		}
	}
	switch {
	case r.head == len(r.order):
		r.order, r.head = r.order[:0], 0
		r.front.Store(0)
	case r.head > 64 && r.head*2 > len(r.order):
		n := copy(r.order, r.order[r.head:])
		clear(r.order[n:])
		r.order, r.head = r.order[:n], 0
		r.front.Store(r.order[0].n)
	default:
		r.front.Store(r.order[r.head].n)
	}
}

// observe notes that the cache has applied version n, and prunes what it
// passed. It locks only when the oldest recorded version is passed.
func (r *record) observe(n uint64) {
	for {
		s := r.seen.Load()
		if n <= s {
			return
		}
		if r.seen.CompareAndSwap(s, n) {
			break
		}
	}
	if f := r.front.Load(); f != 0 && f <= n {
		r.mu.Lock()
		r.pruneLocked()
		r.mu.Unlock()
	}
}

// touched is told of every change the cache applied to key (after it
// applied it): if a delete is pending there, it is dropped once the cache no
// longer holds the object; the waiters for deletes look again.
func (r *record) touched(key informer.NamespacedKey) {
	if r.deleting.Load() == 0 && r.waiting.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.deletes[key]; ok && d.after <= r.seen.Load() && r.gone(key, d.uid) {
		r.dropDeleteLocked(key)
	}
	r.wakeLocked()
}

// wakeLocked wakes the waiters for deletes.
func (r *record) wakeLocked() {
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// changes returns a channel closed at the next change to a key with a
// pending delete. Take it before looking at the cache, so that no change
// after the look is missed.
func (r *record) changes() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.changed
}

// forKey returns what a read of key waits for: the version to reach (zero
// if none) and the delete to see applied (ok false if none).
func (r *record) forKey(key informer.NamespacedKey) (v version, d pendingDelete, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v = r.versions[key]
	d, ok = r.deletes[key]
	return v, d, ok
}

// caughtUpAll reports whether the cache has seen every version recorded and
// no delete is pending.
func (r *record) caughtUpAll() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.highest.n <= r.seen.Load() && len(r.deletes) == 0
}

// keyDelete is a pending delete with its key.
type keyDelete struct {
	key informer.NamespacedKey
	pendingDelete
}

// forAll returns what a read of the whole cache waits for: the highest
// version recorded, unless the cache has seen it, and every pending delete.
func (r *record) forAll() (version, []keyDelete) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.highest
	if v.n <= r.seen.Load() {
		v = version{}
	}
	var ds []keyDelete
	if len(r.deletes) > 0 {
		ds = make([]keyDelete, 0, len(r.deletes))
		for k, d := range r.deletes {
			ds = append(ds, keyDelete{key: k, pendingDelete: d})
		}
	}
	return v, ds
}

// deleteDone forgets the delete of uid under key once a wait has seen the
// cache drop it.
func (r *record) deleteDone(key informer.NamespacedKey, uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.deletes[key]; ok && d.uid == uid {
		r.dropDeleteLocked(key)
	}
}

// size returns how many versions and deletes the record holds (tests).
func (r *record) size() (versions, deletes, order int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.versions), len(r.deletes), len(r.order) - r.head
}
