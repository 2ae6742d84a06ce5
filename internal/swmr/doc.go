// Package swmr provides single-writer, many-reader hash containers whose
// readers take no lock: [Table], a map of *E keyed by a key each element
// carries, and [Set], a set of *E keyed by pointer identity.
//
// # Concurrency contract
//
// Writes (Put, Delete, Reset, Add, Remove) must be serialized by the caller:
// at most one goroutine writes at a time, typically under the caller's own
// mutex. Any number of goroutines may call the read methods (Get, Has, All,
// Len) at the same time as the writer and as each other, with no lock: a
// read only does atomic loads and never blocks, never waits for the writer,
// and never allocates (All allocates its closure only).
//
// # Layout
//
// A container is an open-addressing table of 8-byte slots
// (atomic.Pointer[E]) with linear probing. A slot is empty (nil, which ends
// a probe), live (an element), or a tombstone (a private sentinel pointer,
// which readers skip and a probe continues past). The slot count need not be
// a power of two: the home slot of a hash h among n slots is the high word
// of h×n (Lemire's fast range), so sizes follow the element count closely.
// The load, counting tombstones, stays at most 3/4, so every probe ends.
// A deletion whose next slot is empty empties its slot (and the tombstones
// right before it) instead of leaving a tombstone, so steady churn leaves
// few tombstones.
//
// When an insertion would pass the 3/4 load, or a deletion leaves a table of
// more than 64 slots less than 1/8 live, the writer builds a new slot array
// sized for twice the live count (load 1/2) and publishes it with one
// atomic store: this grows, drops tombstones, or shrinks. Readers that
// loaded the old array finish on it; the writer never writes to an array
// once it has replaced it. Within one array elements never move (there is
// no backward-shift deletion and no Robin Hood displacement), which is what
// gives iteration its guarantee:
//
//   - an iteration yields every element present for the whole iteration
//     exactly once;
//   - an element put or deleted during the iteration may or may not be
//     yielded; a Put that replaces the element of the same key yields the
//     old or the new element, not both; a key deleted and put again during
//     the iteration may be yielded twice (its old and its new element).
//
// A [Table] also keeps one tag byte per slot (a byte of the key's hash, 0
// for an empty slot), so a probe dereferences an element only when its tag
// matches: collisions and misses load no element. A [Set] compares
// pointers, so it needs no tags.
//
// Memory per element, for the table itself (elements excluded): a Table has
// 9 bytes per slot, between 12 (load 3/4) and 18 (load 1/2) bytes per
// element after growth, 13.5 after [Table.Reset]; a Set has 8 bytes per
// slot, between 10.7 and 16; each adds a header of under 100 bytes. (A Go
// map[struct{ns, name string}]*E takes about 63 bytes per element.)
//
// A rebuild rehashes every key, which reads each element and its key's
// memory at random: about 0.17 µs per element on a 2-CPU VM, so a Put that
// rebuilt a table of a million elements at once took 170-300 ms. A Table of
// 16k slots or more therefore grows step by step (migrate.go): from a load
// of 5/8 on, each write also copies 16 slots into the next array, which is
// published whole when the copy ends; the longest Put while filling a table
// with a million elements went from 194-306 ms to 17 ms (BenchmarkGrowStall).
// A Set of that size grows the same way (set_migrate.go): filling one with
// a million members, the longest Add went from 60 ms to 8.4 ms. Shrinks and
// smaller arrays rebuild at once. Readers are never delayed (they go on
// with the array they loaded). Reset took about 270 ms
// for a million elements, where filling a Go map took 540-780 ms.
package swmr
