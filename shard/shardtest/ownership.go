// Package shardtest holds test helpers for programs and backends built on
// package shard.
package shardtest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ginformer/ginformer/shard"
)

// Ownership records, on one clock, when each replica owned each shard (from
// its [shard.Owner]'s OnChange reports) and when a handler or sampler saw
// Owns true, so that [Ownership.Check] can prove that no shard was ever
// owned by two replicas at once. Safe for concurrent use.
type Ownership struct {
	mu        sync.Mutex
	open      map[string]map[int]time.Time // replica → shard → start
	intervals map[int][]interval           // shard → closed intervals
	samples   []sample
	changed   chan struct{} // closed and replaced on every report
}

type interval struct {
	replica    string
	start, end time.Time
}

// sample: Owns was true for shard at some instant in [before, after].
type sample struct {
	replica       string
	shard         int
	before, after time.Time
}

// NewOwnership returns an empty recorder.
func NewOwnership() *Ownership {
	return &Ownership{open: map[string]map[int]time.Time{}, intervals: map[int][]interval{}, changed: make(chan struct{})}
}

// OnChange returns the OwnerOptions.OnChange of the named replica.
func (o *Ownership) OnChange(replica string) func(shard.OwnershipChange) {
	return func(c shard.OwnershipChange) {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.open[replica] == nil {
			o.open[replica] = map[int]time.Time{}
		}
		for s := range c.Released.All() {
			if start, ok := o.open[replica][s]; ok {
				o.intervals[s] = append(o.intervals[s], interval{replica, start, c.At})
				delete(o.open[replica], s)
			}
		}
		for s := range c.Acquired.All() {
			o.open[replica][s] = c.At
		}
		close(o.changed)
		o.changed = make(chan struct{})
	}
}

// Sample records that the named replica saw Owns true for a key of shard s
// at some instant between before and after (equal for a single reading).
func (o *Ownership) Sample(replica string, s int, before, after time.Time) {
	o.mu.Lock()
	o.samples = append(o.samples, sample{replica, s, before, after})
	o.mu.Unlock()
}

// Changed returns a channel closed at the next OnChange report.
func (o *Ownership) Changed() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changed
}

// Check fails t unless the intervals of different replicas on one shard
// never overlap and every sample lies in its own replica's interval.
// Intervals still open end now. Call it once the replicas have stopped:
// an acquisition is published before OnChange records it.
func (o *Ownership) Check(t testing.TB) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	all := map[int][]interval{}
	for s, ivs := range o.intervals {
		all[s] = slices.Clone(ivs)
	}
	now := time.Now()
	for r, open := range o.open {
		for s, start := range open {
			all[s] = append(all[s], interval{r, start, now})
		}
	}
	handoffs := 0
	for s, ivs := range all {
		slices.SortFunc(ivs, func(a, b interval) int { return a.start.Compare(b.start) })
		for i := 1; i < len(ivs); i++ {
			if ivs[i].start.Before(ivs[i-1].end) {
				t.Fatalf("shard %d owned by %s until %v and by %s from %v", s, ivs[i-1].replica,
					ivs[i-1].end.Format(time.StampMicro), ivs[i].replica, ivs[i].start.Format(time.StampMicro))
			}
			if ivs[i].replica != ivs[i-1].replica {
				handoffs++
			}
		}
	}
	for _, sm := range o.samples {
		in := false
		for _, iv := range all[sm.shard] {
			if iv.replica == sm.replica && !sm.after.Before(iv.start) && !sm.before.After(iv.end) {
				in = true
				break
			}
		}
		if !in {
			t.Fatalf("%s saw Owns true for shard %d in [%v, %v], outside its ownership", sm.replica, sm.shard,
				sm.before.Format(time.StampMicro), sm.after.Format(time.StampMicro))
		}
	}
	t.Logf("ownership: %d handoffs between replicas, %d Owns samples, no overlap", handoffs, len(o.samples))
}
