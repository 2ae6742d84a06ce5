package workqueue

// slab holds the per-key entries, addressed by slot: fixed-size chunks, so
// that growing never copies entries (a slice would copy each entry about
// four times as it grows by 1.25×) and a slot's address is stable. Released
// slots are chained through their heapPos field (a free entry is otherwise
// zero) and reused first, so releasing allocates nothing; the chunks stay
// allocated (the high-water mark, like a Go map's buckets). With metrics, a parallel set of chunks holds each
// entry's times. Not safe for concurrent use: the queue's lock guards it.
type slab[K comparable] struct {
	chunks []*[chunkSize]entry[K]
	times  []*[chunkSize]entryTimes // with metrics only
	n      int32                    // slots handed out so far: [0, n) are in chunks
	free   int32                    // 1 + the first released slot, reused first; 0: none
	nfree  int32                    // released slots
	timed  bool                     // keep times
}

const (
	chunkBits = 8
	chunkSize = 1 << chunkBits // 12 KiB of entries with a NamespacedKey
)

// at returns the entry in slot.
func (s *slab[K]) at(slot int32) *entry[K] {
	return &s.chunks[slot>>chunkBits][slot&(chunkSize-1)]
}

// timesAt returns the times of the entry in slot; only with timed.
func (s *slab[K]) timesAt(slot int32) *entryTimes {
	return &s.times[slot>>chunkBits][slot&(chunkSize-1)]
}

// alloc returns an unused slot, whose entry (and times) are zero.
func (s *slab[K]) alloc() int32 {
	if s.free != 0 {
		slot := s.free - 1
		e := s.at(slot)
		s.free, e.heapPos = e.heapPos, 0
		s.nfree--
		return slot
	}
	if int(s.n)>>chunkBits == len(s.chunks) {
		s.chunks = append(s.chunks, new([chunkSize]entry[K]))
		if s.timed {
			s.times = append(s.times, new([chunkSize]entryTimes))
		}
	}
	s.n++
	return s.n - 1
}

// release zeroes the entry in slot (so the garbage collector can reclaim its
// key) and makes the slot available again.
func (s *slab[K]) release(slot int32) {
	*s.at(slot) = entry[K]{heapPos: s.free}
	if s.timed {
		*s.timesAt(slot) = entryTimes{}
	}
	s.free = slot + 1
	s.nfree++
}
