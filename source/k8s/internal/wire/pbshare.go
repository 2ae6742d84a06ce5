package wire

import (
	"hash/maphash"
	"reflect"
	"sync"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ginformer/ginformer/internal/slicehdr"
)

// Subtrees shared byte for byte. Within an object's spec, a field that is a
// pointer to a message (a probe, a security context), a repeated message (a
// container's env, ports or volume mounts, the tolerations) or a map of
// messages (a container's resource requests and limits) is looked up by its
// exact wire bytes: the pods of one Deployment repeat them, so the first
// pod's decoded value is shared by the next ones, which then allocate
// nothing for it.
//
// Shared values are read-only, as every cached object is: the informer
// contract already forbids modifying a cached object (DeepCopy first, and
// the mutation detector catches offenders), and a shared slice has its
// capacity clipped to its length, so an append copies it.
//
// Each field has a table of two generations of at most sharePerGeneration
// values; values not asked for during a generation are forgotten by the
// table (objects that hold them keep them). The tables are within the
// budget of every sharing table (budget.go).
const (
	sharePerGeneration = 4096
	maxSharedSpan      = 2048 // larger subtrees are decoded per object
	// subtreeSlot is what a value costs its table beyond its key's bytes
	// and its decoded value (estimated at twice its wire size): the map
	// slot, the key's header, the value pointer.
	subtreeSlot = 64
	// seenSlot is what the hash of a value seen once costs.
	seenSlot = 16
)

// shareTable is the table of one shared field. mu guards every field.
type shareTable struct {
	mu       sync.Mutex
	cur, old map[string]unsafe.Pointer
	// seen holds the hashes of values seen once: a value becomes
	// canonical the second time it is seen, so that values unique to one
	// object (a volume named after the pod) cost the table a hash, not a
	// copy of their bytes.
	seen, seenOld      map[uint64]struct{}
	curBytes, oldBytes int64 // of cur and old, with seen and seenOld
	hits, misses       uint64
	refused            uint64
}

var shareSeed = maphash.MakeSeed()

// newShareTable returns an empty table, listed for ReadStats and clearing.
func newShareTable() *shareTable {
	t := &shareTable{cur: make(map[string]unsafe.Pointer), seen: make(map[uint64]struct{})}
	allTables.mu.Lock()
	allTables.t = append(allTables.t, t)
	allTables.mu.Unlock()
	return t
}

// spanCost is what a value of wire size n costs its table.
func spanCost(n int) int64 { return int64(3*n + subtreeSlot) }

// admit reports whether span has been seen before, and records it.
func (t *shareTable) admit(span []byte) bool {
	h := maphash.Bytes(shareSeed, span)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.seen[h]; ok {
		return true
	}
	if _, ok := t.seenOld[h]; ok {
		return true
	}
	if len(t.seen) >= 4*sharePerGeneration || !fits(seenSlot) {
		t.rotateLocked()
		if !fits(seenSlot) {
			t.refused++
			return false
		}
	}
	t.seen[h] = struct{}{}
	t.curBytes += seenSlot
	budget.used.Add(seenSlot)
	return false
}

// rotateLocked drops the older generation: the current one becomes it.
func (t *shareTable) rotateLocked() {
	budget.used.Add(-t.oldBytes)
	t.old, t.cur = t.cur, make(map[string]unsafe.Pointer, min(len(t.cur), sharePerGeneration/4))
	t.seenOld, t.seen = t.seen, make(map[uint64]struct{}, min(len(t.seen), sharePerGeneration))
	t.oldBytes, t.curBytes = t.curBytes, 0
}

func (t *shareTable) get(span []byte) unsafe.Pointer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.cur[string(span)]; ok {
		t.hits++
		return p
	}
	if p, ok := t.old[string(span)]; ok {
		t.hits++
		cost := spanCost(len(span))
		delete(t.old, string(span))
		t.oldBytes -= cost
		budget.used.Add(-cost)
		t.putLocked(string(span), p)
		return p
	}
	t.misses++
	return nil
}

func (t *shareTable) put(span []byte, p unsafe.Pointer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.putLocked(string(span), p)
}

func (t *shareTable) putLocked(key string, p unsafe.Pointer) {
	cost := spanCost(len(key))
	if len(t.cur) >= sharePerGeneration || !fits(cost) {
		t.rotateLocked()
		if !fits(cost) {
			t.refused++
			return
		}
	}
	t.cur[key] = p
	t.curBytes += cost
	budget.used.Add(cost)
}

// stats returns the table's entries, hits, misses and refusals.
func (t *shareTable) stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Stats{Entries: len(t.cur) + len(t.old), Hits: t.hits, Misses: t.misses, Refused: t.refused}
}

// clear empties the table.
func (t *shareTable) clear() {
	t.mu.Lock()
	defer t.mu.Unlock()
	budget.used.Add(-t.curBytes - t.oldBytes)
	t.cur, t.old = make(map[string]unsafe.Pointer), nil
	t.seen, t.seenOld = make(map[uint64]struct{}), nil
	t.curBytes, t.oldBytes = 0, 0
}

// cloneMap returns a copy of map m.
func cloneMap(m reflect.Value) reflect.Value {
	c := reflect.MakeMapWithSize(m.Type(), m.Len())
	for it := m.MapRange(); it.Next(); {
		c.SetMapIndex(it.Key(), it.Value())
	}
	return c
}

// shared decodes field f (number num) from b, which starts at its tag,
// through the field's table: the consecutive occurrences of the field are
// looked up by their bytes and, if found, the canonical value is assigned
// to at; if not, they are decoded and become canonical. ok is false when
// the field is not shared here (then nothing is consumed).
func (f *pbField) shared(b []byte, num protowire.Number, at unsafe.Pointer) (rest []byte, ok bool, err error) {
	empty := false
	switch f.kind {
	case pbPtrMsg, pbMap, pbMapStringString:
		empty = *(*unsafe.Pointer)(at) == nil
	case pbSliceMsg:
		empty = (*slicehdr.Header)(at).Len == 0
	}
	if !empty {
		switch f.kind {
		case pbSliceMsg:
			return b, false, nil // appends to a clipped slice copy it
		case pbMap, pbMapStringString:
			// The map's entries came in two runs: the map may be a
			// canonical one, so the rest goes into a copy.
			m := reflect.NewAt(f.typ, at).Elem()
			m.Set(cloneMap(m))
			return b, false, nil
		}
		return nil, false, ErrSharedMerge
	}
	end := 0
	for r := b; len(r) > 0; {
		n2, t2, n := protowire.ConsumeTag(r)
		if n < 0 || n2 != num || t2 != protowire.BytesType {
			break
		}
		m := protowire.ConsumeFieldValue(n2, t2, r[n:])
		if m < 0 {
			return nil, false, pbErr(m)
		}
		end += n + m
		r = r[n+m:]
		if end > maxSharedSpan {
			return b, false, nil
		}
		if f.kind == pbPtrMsg {
			break
		}
	}
	if end == 0 {
		return b, false, nil
	}
	span := b[:end]
	if c := f.table.get(span); c != nil {
		f.assign(at, c)
		return b[end:], true, nil
	}
	for r := span; len(r) > 0; {
		_, typ, n := protowire.ConsumeTag(r)
		if r, err = f.decode(r[n:], typ, at); err != nil {
			return nil, false, err
		}
	}
	if !f.table.admit(span) {
		return b[end:], true, nil
	}
	var canon unsafe.Pointer
	switch f.kind {
	case pbPtrMsg, pbMap, pbMapStringString:
		canon = *(*unsafe.Pointer)(at)
	case pbSliceMsg:
		h := *(*slicehdr.Header)(at)
		h.Cap = h.Len
		*(*slicehdr.Header)(at) = h
		canon = unsafe.Pointer(&h)
	}
	f.table.put(span, canon)
	return b[end:], true, nil
}

// assign stores the canonical value c (as the table holds it) into at.
func (f *pbField) assign(at, c unsafe.Pointer) {
	switch f.kind {
	case pbPtrMsg, pbMap, pbMapStringString:
		*(*unsafe.Pointer)(at) = c
	case pbSliceMsg:
		*(*slicehdr.Header)(at) = *(*slicehdr.Header)(c)
	}
}
