package wire

import (
	"hash/maphash"
	"strings"
	"sync"
)

// sharedStrings is the process's table of canonical strings, shared by
// every source (namespaces and node names repeat across resources).
//
// unique.Make is not used: its table holds entries weakly through the
// Handle, and a string kept only as a Value() loses its entry at the next
// garbage collection, so objects decoded after it would get new copies.
//
// The table is bounded and forgets what is no longer used: each shard keeps
// two generations; a lookup that misses the current one and hits the
// previous one moves the string forward, and when the current generation is
// full, or a new string would take the tables over their budget (see
// budget.go), it becomes the previous one (the oldest is dropped). A string
// no object asks for during a whole generation is forgotten by the table
// (the objects that hold it keep it).
var sharedStrings = newStringTable()

const (
	stringShards     = 64
	stringsPerShard  = 16 << 10 // a generation; 64 shards: up to 2M strings in two generations
	stringShardsMask = stringShards - 1
	// stringSlot is what a string costs the table beyond its bytes: its
	// key and value headers in the map, and the map's slot overhead.
	stringSlot = 48
)

type stringTable struct {
	seed   maphash.Seed
	shards [stringShards]stringShard
}

// stringShard is one shard of the table. mu guards every other field.
type stringShard struct {
	mu                 sync.Mutex
	cur, old           map[string]string
	curBytes, oldBytes int64
	hits, misses       uint64
	refused            uint64
	_                  [40]byte // keeps shards on separate cache lines
}

func newStringTable() *stringTable {
	t := &stringTable{seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].cur = make(map[string]string)
	}
	return t
}

// get returns the canonical copy of s, making s (cloned, so that it does
// not pin a larger buffer) canonical if there is none and the budget allows.
func (t *stringTable) get(s string) string {
	sh := &t.shards[maphash.String(t.seed, s)&stringShardsMask]
	sh.mu.Lock()
	c, ok := sh.cur[s]
	if !ok {
		c = sh.promoteLocked(s, strings.Clone)
	} else {
		sh.hits++
	}
	sh.mu.Unlock()
	return c
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
		c = sh.promoteLocked(string(b), nil)
	} else {
		sh.hits++
	}
	sh.mu.Unlock()
	return c
}

// promoteLocked returns the canonical copy of s, which the current
// generation does not hold: the previous generation's, moved forward, or
// else s (cloned by clone, if not nil) made canonical, if the budget
// allows.
func (sh *stringShard) promoteLocked(s string, clone func(string) string) string {
	cost := int64(len(s) + stringSlot)
	c, ok := sh.old[s]
	if ok {
		sh.hits++
		delete(sh.old, s)
		sh.oldBytes -= cost
		budget.used.Add(-cost)
	} else {
		sh.misses++
		c = s
		if clone != nil {
			c = clone(s)
		}
	}
	if len(sh.cur) >= stringsPerShard || !fits(cost) {
		budget.used.Add(-sh.oldBytes)
		sh.old, sh.cur = sh.cur, make(map[string]string, min(len(sh.cur), stringsPerShard/4))
		sh.oldBytes, sh.curBytes = sh.curBytes, 0
		if !fits(cost) {
			sh.refused++
			return c
		}
	}
	sh.cur[c] = c
	sh.curBytes += cost
	budget.used.Add(cost)
	return c
}

// stats returns the table's entries, hits, misses and refusals.
func (t *stringTable) stats() Stats {
	var s Stats
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		s.Entries += len(sh.cur) + len(sh.old)
		s.Hits += sh.hits
		s.Misses += sh.misses
		s.Refused += sh.refused
		sh.mu.Unlock()
	}
	return s
}

// clear empties the table.
func (t *stringTable) clear() {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		budget.used.Add(-sh.curBytes - sh.oldBytes)
		sh.cur, sh.old = make(map[string]string), nil
		sh.curBytes, sh.oldBytes = 0, 0
		sh.mu.Unlock()
	}
}
