package shard

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Range is a contiguous range of 64-bit hashes: Start ≤ h < End. The end of
// the hash space, 2⁶⁴, does not fit in a uint64 and is written End == 0, so
// Range{Start: 0, End: 0} is the whole space; an empty range is never
// produced by this package.
type Range struct {
	Start uint64
	End   uint64 // exclusive; 0 means 2⁶⁴
}

// Contains reports whether h is in r.
func (r Range) Contains(h uint64) bool {
	return h >= r.Start && (r.End == 0 || h < r.End)
}

// String renders r as [0x…, 0x…) with 16 hex digits, the end of the space
// as 0x10000000000000000.
func (r Range) String() string {
	return "[" + hex(r.Start) + ", " + endHex(r.End) + ")"
}

func hex(v uint64) string { return fmt.Sprintf("0x%016x", v) }

func endHex(end uint64) string {
	if end == 0 {
		return "0x10000000000000000"
	}
	return hex(end)
}

// MergeRanges returns the ranges of rs sorted by Start, with adjacent or
// overlapping ranges merged into one. rs is not modified.
func MergeRanges(rs []Range) []Range {
	if len(rs) == 0 {
		return nil
	}
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b Range) int { return cmp.Compare(a.Start, b.Start) })
	out := s[:1]
	for _, r := range s[1:] {
		last := &out[len(out)-1]
		if last.End == 0 { // reaches the end of the space: covers the rest
			break
		}
		if r.Start <= last.End {
			if r.End == 0 || r.End > last.End {
				last.End = r.End
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// Fields the Kubernetes apiserver's sharded list and watch (KEP-5866) can
// hash, for [Selector].
const (
	// FieldUID hashes each object's metadata.uid: objects spread evenly.
	FieldUID = "object.metadata.uid"
	// FieldNamespace hashes each object's metadata.namespace: all objects
	// of a namespace land on one replica.
	FieldNamespace = "object.metadata.namespace"
)

// Selector renders ranges as a Kubernetes ShardSelector (ListOptions
// shardSelector, KEP-5866) over field ([FieldUID] or [FieldNamespace]):
// one shardRange(field, '0x…', '0x…') term per merged range, joined by
// " || ", bounds with 16 hex digits and the end of the space written
// '0x10000000000000000', as the apiserver requires. Adjacent ranges are
// merged first. No ranges give "" (an empty selector, which the apiserver
// reads as "everything": do not send it for a replica that owns nothing).
func Selector(field string, ranges []Range) string {
	var b strings.Builder
	for i, r := range MergeRanges(ranges) {
		if i > 0 {
			b.WriteString(" || ")
		}
		fmt.Fprintf(&b, "shardRange(%s, '%s', '%s')", field, hex(r.Start), endHex(r.End))
	}
	return b.String()
}
