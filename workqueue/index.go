package workqueue

import "hash/maphash"

// keyIndex maps the queue's keys to their slots in the queue's slab: an
// open-addressing hash table with linear probing whose buckets hold a slot
// and the key's 32-bit hash. It does what a map[K]int32 would, with less
// work on the queue's hot paths:
//
//   - a lookup that misses tells where to insert, so adding a new key
//     hashes it once (a Go map needs a lookup and an assignment: twice);
//   - probes compare 8-byte buckets and touch an entry's key only when the
//     hashes match;
//   - removal needs no hashing (the entry keeps its hash; the bucket is
//     found by slot), and growth none (buckets keep theirs).
//
// Buckets are filled to at most 3/4; removal shifts the rest of the probe
// run back, so there are no tombstones. The table keeps its size when keys
// leave, like a Go map. Hashes come from [maphash.Comparable] with a
// random seed per process, so that the queue hashes a key before taking its
// lock. Not safe for concurrent use: the queue's lock guards it.
type keyIndex struct {
	tab []bucket // len is 0 or a power of two
	n   int      // buckets in use
}

// seed is the hash seed of every keyIndex in the process.
var seed = maphash.MakeSeed()

// bucket is one slot of the table; slot1 is the entry's slot plus one, 0
// for an empty bucket.
type bucket struct {
	hash  uint32
	slot1 int32
}

const minBuckets = 64

// hashKey returns key's hash. It allocates nothing for keys made of
// strings and integers (string, NamespacedKey, int, ...).
func hashKey[K comparable](key K) uint32 {
	return uint32(maphash.Comparable(seed, key))
}

// find returns the slot of key (whose hash is h) and true, or the position
// of the empty bucket where it would go and false. ix must have at least
// one empty bucket (ensureRoom).
func find[K comparable](ix *keyIndex, entries *slab[K], key K, h uint32) (slotOrPos int, found bool) {
	mask := len(ix.tab) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		b := ix.tab[i]
		if b.slot1 == 0 {
			return i, false
		}
		if b.hash == h && entries.at(b.slot1-1).key == key {
			return int(b.slot1 - 1), true
		}
	}
}

// lookup returns the slot of key, whose hash is h, if ix has the key.
func lookup[K comparable](ix *keyIndex, entries *slab[K], key K, h uint32) (int32, bool) {
	if ix.n == 0 {
		return 0, false
	}
	slot, ok := find(ix, entries, key, h)
	return int32(slot), ok
}

// ensureRoom grows the table if one more key would fill it beyond 3/4. It
// invalidates positions returned by find.
func (ix *keyIndex) ensureRoom() {
	if (ix.n+1)*4 <= len(ix.tab)*3 {
		return
	}
	old := ix.tab
	ix.tab = make([]bucket, max(minBuckets, 2*len(old)))
	mask := len(ix.tab) - 1
	for _, b := range old {
		if b.slot1 == 0 {
			continue
		}
		i := int(b.hash) & mask
		for ix.tab[i].slot1 != 0 {
			i = (i + 1) & mask
		}
		ix.tab[i] = b
	}
}

// insertAt fills the empty bucket at pos, returned by find for a key with
// hash h, with slot.
func (ix *keyIndex) insertAt(pos int, h uint32, slot int32) {
	ix.tab[pos] = bucket{hash: h, slot1: slot + 1}
	ix.n++
}

// remove removes slot, whose key has hash h, from the table. The slot must
// be in it.
func (ix *keyIndex) remove(h uint32, slot int32) {
	mask := len(ix.tab) - 1
	i := int(h) & mask
	for ix.tab[i].slot1 != slot+1 {
		i = (i + 1) & mask
	}
	// Shift back the buckets after i whose home is not in (i, j], so that
	// every key stays reachable from its home without tombstones.
	for j := (i + 1) & mask; ix.tab[j].slot1 != 0; j = (j + 1) & mask {
		home := int(ix.tab[j].hash) & mask
		if i <= j {
			if i < home && home <= j {
				continue
			}
		} else if i < home || home <= j {
			continue
		}
		ix.tab[i] = ix.tab[j]
		i = j
	}
	ix.tab[i] = bucket{}
	ix.n--
}
