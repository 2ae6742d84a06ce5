package wire

import (
	"hash/maphash"
	"sync"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
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
// table (objects that hold them keep them).
const (
	sharePerGeneration = 4096
	maxSharedSpan      = 2048 // larger subtrees are decoded per object
)

type shareTable struct {
	mu       sync.Mutex
	cur, old map[string]unsafe.Pointer
	// seen holds the hashes of values seen once: a value becomes
	// canonical the second time it is seen, so that values unique to one
	// object (a volume named after the pod) cost the table a hash, not a
	// copy of their bytes.
	seen, seenOld map[uint64]struct{}
}

var shareSeed = maphash.MakeSeed()

func newShareTable() *shareTable {
	return &shareTable{cur: make(map[string]unsafe.Pointer), seen: make(map[uint64]struct{})}
}

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
	if len(t.seen) >= 4*sharePerGeneration {
		t.seenOld, t.seen = t.seen, make(map[uint64]struct{}, sharePerGeneration)
	}
	t.seen[h] = struct{}{}
	return false
}

func (t *shareTable) get(span []byte) unsafe.Pointer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.cur[string(span)]; ok {
		return p
	}
	if p, ok := t.old[string(span)]; ok {
		t.putLocked(string(span), p)
		return p
	}
	return nil
}

func (t *shareTable) put(span []byte, p unsafe.Pointer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.putLocked(string(span), p)
}

func (t *shareTable) putLocked(key string, p unsafe.Pointer) {
	if len(t.cur) >= sharePerGeneration {
		t.old, t.cur = t.cur, make(map[string]unsafe.Pointer, sharePerGeneration/4)
	}
	t.cur[key] = p
}

// shared decodes field f (number num) from b, which starts at its tag,
// through the field's table: the consecutive occurrences of the field are
// looked up by their bytes and, if found, the canonical value is assigned
// to at; if not, they are decoded and become canonical. ok is false when
// the field is not shared here (then nothing is consumed).
func (f *pbField) shared(b []byte, num protowire.Number, at unsafe.Pointer) (rest []byte, ok bool, err error) {
	empty := false
	switch f.kind {
	case pbPtrMsg, pbMap:
		empty = *(*unsafe.Pointer)(at) == nil
	case pbSliceMsg:
		empty = (*sliceHeader)(at).len == 0
	}
	if !empty {
		if f.kind == pbSliceMsg {
			return b, false, nil // appends to a clipped slice copy it
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
	case pbPtrMsg, pbMap:
		canon = *(*unsafe.Pointer)(at)
	case pbSliceMsg:
		h := *(*sliceHeader)(at)
		h.cap = h.len
		*(*sliceHeader)(at) = h
		canon = unsafe.Pointer(&h)
	}
	f.table.put(span, canon)
	return b[end:], true, nil
}

// assign stores the canonical value c (as the table holds it) into at.
func (f *pbField) assign(at, c unsafe.Pointer) {
	switch f.kind {
	case pbPtrMsg, pbMap:
		*(*unsafe.Pointer)(at) = c
	case pbSliceMsg:
		*(*sliceHeader)(at) = *(*sliceHeader)(c)
	}
}

// getBytes is get for a string held as bytes: a string already in the
// table costs no allocation.
func (t *stringTable) getBytes(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	sh := &t.shards[maphash.Bytes(t.seed, b)&stringShardsMask]
	sh.mu.Lock()
	c, ok := sh.cur[string(b)]
	if !ok {
		if c, ok = sh.old[string(b)]; !ok {
			c = string(b)
		}
		if len(sh.cur) >= stringsPerShard {
			sh.old, sh.cur = sh.cur, make(map[string]string, stringsPerShard/4)
		}
		sh.cur[c] = c
	}
	sh.mu.Unlock()
	return c
}
