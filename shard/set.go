package shard

import (
	"fmt"
	"iter"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// Set is an immutable set of the virtual shards of a space of N shards:
// what a member is assigned, or holds. Methods never modify a Set; those
// that combine sets return a new one. The zero Set is the empty set of a
// space of 0 shards: it contains nothing and combines with any set.
type Set struct {
	n    int
	bits []uint64 // shard i is bit i%64 of word i/64; never modified after construction
}

// NewSet returns the set of the given shards of a space of n shards.
//
// Possible errors: [ErrInvalidShards] when n is out of [1, MaxShards] or a
// shard is outside [0, n).
func NewSet(n int, shards ...int) (Set, error) {
	if err := checkShards(n); err != nil {
		return Set{}, err
	}
	s := Set{n: n, bits: make([]uint64, (n+63)/64)}
	for _, i := range shards {
		if i < 0 || i >= n {
			return Set{}, fmt.Errorf("shard: shard %d of %d: %w", i, n, ErrInvalidShards)
		}
		s.bits[i/64] |= 1 << (i % 64)
	}
	return s, nil
}

// Shards returns the number of shards of the space the set belongs to.
func (s Set) Shards() int { return s.n }

// Has reports whether shard i is in s.
func (s Set) Has(i int) bool {
	return i >= 0 && i < s.n && s.bits[i/64]&(1<<(i%64)) != 0
}

// Contains reports whether hash h falls into one of the shards of s.
func (s Set) Contains(h uint64) bool {
	if s.n == 0 {
		return false
	}
	return s.Has(ShardOf(h, s.n))
}

// Len returns the number of shards in s.
func (s Set) Len() int {
	n := 0
	for _, w := range s.bits {
		n += bits.OnesCount64(w)
	}
	return n
}

// Empty reports whether s has no shard.
func (s Set) Empty() bool { return s.Len() == 0 }

// All yields the shards of s in increasing order. The iterator may be
// reused.
func (s Set) All() iter.Seq[int] {
	return func(yield func(int) bool) {
		for wi, w := range s.bits {
			for w != 0 {
				b := bits.TrailingZeros64(w)
				if !yield(wi*64 + b) {
					return
				}
				w &= w - 1
			}
		}
	}
}

// Equal reports whether s and t hold the same shards (of the same space,
// unless both are empty).
func (s Set) Equal(t Set) bool {
	if s.Empty() && t.Empty() {
		return true
	}
	return s.n == t.n && slices.Equal(s.bits, t.bits)
}

// combine applies f word by word; a zero-space operand takes the other's
// space. Sets of different non-zero spaces are a programming error: the
// result is the empty set of s's space.
func (s Set) combine(t Set, f func(a, b uint64) uint64) Set {
	switch {
	case s.n == 0 && t.n == 0:
		return Set{}
	case s.n == 0:
		s = Set{n: t.n, bits: make([]uint64, len(t.bits))}
	case t.n == 0:
		t = Set{n: s.n, bits: make([]uint64, len(s.bits))}
	case s.n != t.n:
		return Set{n: s.n, bits: make([]uint64, len(s.bits))}
	}
	out := Set{n: s.n, bits: make([]uint64, len(s.bits))}
	for i := range out.bits {
		out.bits[i] = f(s.bits[i], t.bits[i])
	}
	return out
}

// Union returns the shards in s or t.
func (s Set) Union(t Set) Set { return s.combine(t, func(a, b uint64) uint64 { return a | b }) }

// Intersect returns the shards in both s and t.
func (s Set) Intersect(t Set) Set { return s.combine(t, func(a, b uint64) uint64 { return a & b }) }

// Minus returns the shards in s and not in t.
func (s Set) Minus(t Set) Set { return s.combine(t, func(a, b uint64) uint64 { return a &^ b }) }

// Ranges returns the hash ranges of the shards of s, adjacent shards merged
// into one range, sorted by Start.
func (s Set) Ranges() []Range {
	var out []Range
	for i := range s.All() {
		r := ShardRange(i, s.n)
		if len(out) > 0 && out[len(out)-1].End == r.Start {
			out[len(out)-1].End = r.End
			continue
		}
		out = append(out, r)
	}
	return out
}

// Selector renders the ranges of s as a Kubernetes ShardSelector over
// field; see [Selector].
func (s Set) Selector(field string) string { return Selector(field, s.Ranges()) }

// String renders s as comma-separated shards and runs of shards ("0-15,40"),
// "" when empty; [ParseSet] reads it back.
func (s Set) String() string {
	var b strings.Builder
	start, prev := -2, -2
	flush := func() {
		if start < 0 {
			return
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(start))
		if prev > start {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(prev))
		}
	}
	for i := range s.All() {
		if i != prev+1 {
			flush()
			start = i
		}
		prev = i
	}
	flush()
	return b.String()
}

// ParseSet reads the form [Set.String] writes, for a space of n shards.
//
// Possible errors: [ErrInvalidShards] for a malformed string, a shard out
// of [0, n) or a bad n.
func ParseSet(n int, s string) (Set, error) {
	if err := checkShards(n); err != nil {
		return Set{}, err
	}
	var shards []int
	if s != "" {
		for part := range strings.SplitSeq(s, ",") {
			lo, hi, isRun := strings.Cut(part, "-")
			a, err := strconv.Atoi(lo)
			if err != nil {
				return Set{}, fmt.Errorf("shard: set %q: %w", s, ErrInvalidShards)
			}
			b := a
			if isRun {
				if b, err = strconv.Atoi(hi); err != nil || b < a {
					return Set{}, fmt.Errorf("shard: set %q: %w", s, ErrInvalidShards)
				}
			}
			if a < 0 || b >= n {
				return Set{}, fmt.Errorf("shard: set %q: shard out of [0, %d): %w", s, n, ErrInvalidShards)
			}
			for i := a; i <= b; i++ {
				shards = append(shards, i)
			}
		}
	}
	return NewSet(n, shards...)
}
