package bench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// fmtNum renders v with 3 significant digits and thousands separators.
func fmtNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	a := math.Abs(v)
	var s string
	switch {
	case a == 0:
		return "0"
	case a >= 1000:
		s = strconv.FormatFloat(math.Round(v), 'f', 0, 64)
		return commas(s)
	case a >= 100:
		s = strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	case a >= 0.01:
		s = strconv.FormatFloat(v, 'f', 3, 64)
	default:
		s = strconv.FormatFloat(v, 'g', 3, 64)
	}
	return s
}

func commas(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// cell renders "median [min..max]" (just the median for one sample or a
// constant).
func cell(xs []float64) string {
	if len(xs) == 0 {
		return "—"
	}
	med := fmtNum(Median(xs))
	lo, hi := fmtNum(slices.Min(xs)), fmtNum(slices.Max(xs))
	if len(xs) == 1 || lo == hi {
		return med
	}
	return fmt.Sprintf("%s [%s..%s]", med, lo, hi)
}

// ratioCell renders ginformer/client-go and, for clarity, the gain.
func ratioCell(r *Row) string {
	if len(r.CG) == 0 {
		return ""
	}
	ratio := r.Ratio()
	if math.IsNaN(ratio) || math.IsInf(ratio, 0) {
		if Median(r.GI) == 0 && Median(r.CG) == 0 {
			return "="
		}
		return "—"
	}
	g := r.Gain()
	dir := "better"
	if g < 1 {
		g, dir = 1/g, "worse"
	}
	if g < 1.05 {
		return fmt.Sprintf("%s (≈)", fmtNum(ratio))
	}
	return fmt.Sprintf("%s (%s× %s)", fmtNum(ratio), fmtNum(g), dir)
}

func targetCell(r *Row) string {
	v, fig := r.Verdict()
	if v == "" {
		return ""
	}
	if v == "met" {
		return "✅ " + fig
	}
	return "❌ " + fig
}

// Table returns the markdown table of the comparison rows and, separately,
// of the floor rows.
func Table(rows []Row) (cmp, floor string) {
	var b, f strings.Builder
	b.WriteString("| group | workload | unit | client-go | ginformer | ratio g/c | target |\n|---|---|---|---|---|---|---|\n")
	f.WriteString("| operation | unit | median [min..max] |\n|---|---|---|\n")
	for i := range rows {
		r := &rows[i]
		if len(r.CG) == 0 {
			fmt.Fprintf(&f, "| %s | %s | %s |\n", r.Name, r.Unit, cell(r.GI))
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n",
			r.Group, r.Name, r.Unit, cell(r.CG), cell(r.GI), ratioCell(r), targetCell(r))
	}
	return b.String(), f.String()
}

// Text returns a plain-text table for the terminal.
func Text(rows []Row) string {
	var b strings.Builder
	w1 := 20
	for _, r := range rows {
		w1 = max(w1, len([]rune(r.Name))+len(r.Unit)+3)
	}
	fmt.Fprintf(&b, "%-*s  %-28s  %-28s  %-22s  %s\n", w1, "workload [unit]", "client-go", "ginformer", "ratio g/c", "target")
	group := ""
	for i := range rows {
		r := &rows[i]
		if r.Group != group {
			group = r.Group
			fmt.Fprintf(&b, "-- %s\n", group)
		}
		name := r.Name + " [" + r.Unit + "]"
		pad := w1 - len([]rune(name))
		fmt.Fprintf(&b, "%s%s  %-28s  %-28s  %-22s  %s\n", name, strings.Repeat(" ", max(pad, 0)),
			cell(r.CG), cell(r.GI), ratioCell(r), targetCell(r))
	}
	return b.String()
}

// Targets returns the rows that carry a target.
func Targets(rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		if r.Target.Kind != NoTarget && len(r.CG) > 0 || r.Target.Kind == GinformerAtMost {
			out = append(out, r)
		}
	}
	return out
}
