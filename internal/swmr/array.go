package swmr

import (
	"math/bits"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Sizing policy, shared by Table and Set.
const (
	minSlots       = 4  // smallest slot array
	shrinkMinSlots = 64 // arrays this small never shrink
)

// overloaded reports whether used slots (live + tombstones) out of n pass
// the maximum load of 3/4.
func overloaded(used, n int) bool { return used*4 > n*3 }

// rebuildSlots is the slot count of an array rebuilt for live elements: load 1/2.
func rebuildSlots(live int) int { return max(minSlots, 2*live) }

// hintSlots is the slot count that holds n elements without a rebuild.
func hintSlots(n int) int { return max(minSlots, (4*n+2)/3) }

// bulkSlots is the slot count of an array filled at once with n elements:
// load 2/3, leaving room for n/8 more before a rebuild.
func bulkSlots(n int) int { return max(hintSlots(n), n+n/2) }

// array is one slot array. Readers only Load its slots; the writer stores
// into the current array only, and fills a new array with plain stores
// before it publishes it (the atomic store of the publication orders them).
type array[E any] struct {
	slots []atomic.Pointer[E]
}

func newArray[E any](n int) *array[E] {
	return &array[E]{slots: make([]atomic.Pointer[E], n)}
}

// home is the first slot probed for hash h.
func (a *array[E]) home(h uint64) int {
	hi, _ := bits.Mul64(h, uint64(len(a.slots)))
	return int(hi)
}

// raw views the slots of an array nobody else can see yet as plain
// pointers: atomic.Pointer[E] is a single pointer word, and filling a fresh
// array with plain stores saves an atomic exchange per element.
func (a *array[E]) raw() []*E {
	return unsafe.Slice((**E)(unsafe.Pointer(unsafe.SliceData(a.slots))), len(a.slots))
}

// place stores e, whose key is in no slot yet, in the first empty slot from
// its home in an array that is not published yet.
func place[E any](raw []*E, home int, e *E) {
	i := home
	for raw[i] != nil {
		if i++; i == len(raw) {
			i = 0
		}
	}
	raw[i] = e
}

// erase removes the live element of slot i of the current array a: the slot
// becomes empty if the next one is (and so do the tombstones right before
// it), else a tombstone. It returns the change in used slots (zero or
// negative). Emptying is safe for readers: a slot followed by an empty one
// is on no probe path from a home to a live element. tags
// are the array's tags (nil for none): each emptied slot's tag is cleared
// after its pointer.
func erase[E any](a *array[E], tags []atomic.Uint64, i int, tomb *E) (freed int) {
	s := a.slots
	next := i + 1
	if next == len(s) {
		next = 0
	}
	if s[next].Load() != nil {
		s[i].Store(tomb)
		return 0
	}
	s[i].Store(nil)
	if tags != nil {
		setTag(tags, i, 0)
	}
	freed = -1
	for j := prev(i, len(s)); s[j].Load() == tomb; j = prev(j, len(s)) {
		s[j].Store(nil)
		if tags != nil {
			setTag(tags, j, 0)
		}
		freed--
	}
	return freed
}

func prev(i, n int) int {
	if i == 0 {
		return n - 1
	}
	return i - 1
}

// all yields the live elements of a, in slot order.
func all[E any](a *array[E], tomb *E, yield func(*E) bool) {
	for i := range a.slots {
		e := a.slots[i].Load()
		if e == nil || e == tomb {
			continue
		}
		if !yield(e) {
			return
		}
	}
}

// tombHolder gives a zero-size E a distinct address too.
type tombHolder[E any] struct {
	e E
	_ byte
}

// tombs holds one tombstone sentinel per element type, keyed by reflect.Type.
var tombs sync.Map

// tombstone returns the sentinel *E that marks a deleted slot. It is
// allocated once per element type, never handed out, and never
// dereferenced, so no caller's *E can equal it.
func tombstone[E any]() *E {
	typ := reflect.TypeFor[E]()
	if p, ok := tombs.Load(typ); ok {
		return p.(*E)
	}
	p, _ := tombs.LoadOrStore(typ, &new(tombHolder[E]).e)
	return p.(*E)
}
