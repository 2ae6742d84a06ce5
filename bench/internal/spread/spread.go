// Package spread summarises a figure measured over several runs of a
// benchmark tool: its median and range, formatted for the tables of
// docs/benchmarks.md.
package spread

import (
	"fmt"
	"math"
	"slices"
)

// Stat is the median and range of a figure over runs.
type Stat struct{ Med, Lo, Hi float64 }

// Of returns the median, smallest and largest of xs; Med is NaN (shown as
// "–") when xs is empty.
func Of(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{Med: math.NaN()}
	}
	s := slices.Sorted(slices.Values(xs))
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stat{Med: m, Lo: s[0], Hi: s[len(s)-1]}
}

// String is "median [lo..hi]", the median alone when every run agrees, and
// "–" for an unknown (NaN) or not applicable (negative) figure.
func (s Stat) String() string {
	switch {
	case math.IsNaN(s.Med) || s.Med < 0:
		return "–"
	case s.Lo == s.Hi:
		return Num(s.Med)
	}
	return fmt.Sprintf("%s [%s..%s]", Num(s.Med), Num(s.Lo), Num(s.Hi))
}

// Num formats x with about three significant digits.
func Num(x float64) string {
	switch ax := max(x, -x); {
	case ax >= 100:
		return fmt.Sprintf("%.0f", x)
	case ax >= 10:
		return fmt.Sprintf("%.1f", x)
	case x == math.Trunc(x):
		return fmt.Sprintf("%.0f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}
