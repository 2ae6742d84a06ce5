package bench

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// SVG draws how many times better ginformer is than client-go for every
// charted row (log scale; right of 1×: ginformer better), with each row's
// target as a tick. Self-contained SVG, no external tools.
func SVG(rows []Row, subtitle string) string {
	var chart []*Row
	for i := range rows {
		if rows[i].Chart && len(rows[i].CG) > 0 {
			chart = append(chart, &rows[i])
		}
	}
	const (
		labelW = 430
		plotW  = 460
		rowH   = 24
		top    = 64
		left   = labelW + 10
	)
	lo, hi := -1.0, 4.0 // log10 range: 0.1× .. 10,000×
	for _, r := range chart {
		g := math.Log10(r.Gain())
		if !math.IsNaN(g) && !math.IsInf(g, 0) {
			lo = math.Min(lo, math.Floor(g))
			hi = math.Max(hi, math.Ceil(g))
		}
	}
	x := func(g float64) float64 {
		lg := math.Log10(g)
		lg = math.Max(lo, math.Min(hi, lg))
		return left + (lg-lo)/(hi-lo)*plotW
	}
	h := top + rowH*len(chart) + 50
	w := left + plotW + 90
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="15" font-weight="bold">ginformer vs client-go: times better (median, log scale; right of 1× = ginformer better)</text>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="38" fill="#555">%s</text>`+"\n", html.EscapeString(subtitle))
	// grid
	for e := lo; e <= hi; e++ {
		gx := x(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", gx, top-8, gx, top+rowH*len(chart), map[bool]string{true: "#333", false: "#ddd"}[e == 0])
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s×</text>`+"\n", gx, top+rowH*len(chart)+16, fmtNum(math.Pow(10, e)))
	}
	for i, r := range chart {
		y := top + i*rowH
		g := r.Gain()
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW, y+15, html.EscapeString(r.Group+": "+r.Name))
		x0, x1 := x(1), x(g)
		color := "#2e8b57"
		if g < 1 {
			x0, x1, color = x1, x0, "#c0392b"
		}
		if v, _ := r.Verdict(); v == "missed" && g >= 1 {
			color = "#e1a33b"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", x0, y+4, math.Max(x1-x0, 1), rowH-8, color)
		if t := targetGain(r); t > 0 {
			tx := x(t)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black" stroke-width="2"/>`+"\n", tx, y+1, tx, y+rowH-1)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#222">%s×</text>`+"\n", math.Max(x(g), x(1))+4, y+15, fmtNum(g))
	}
	ly := top + rowH*len(chart) + 36
	fmt.Fprintf(&b, `<rect x="10" y="%d" width="12" height="10" fill="#2e8b57"/><text x="26" y="%d">target met</text>`, ly-9, ly)
	fmt.Fprintf(&b, `<rect x="110" y="%d" width="12" height="10" fill="#e1a33b"/><text x="126" y="%d">better, target missed</text>`, ly-9, ly)
	fmt.Fprintf(&b, `<rect x="280" y="%d" width="12" height="10" fill="#c0392b"/><text x="296" y="%d">worse than client-go</text>`, ly-9, ly)
	fmt.Fprintf(&b, `<line x1="450" y1="%d" x2="450" y2="%d" stroke="black" stroke-width="2"/><text x="458" y="%d">target</text>`+"\n", ly-10, ly+2, ly)
	b.WriteString("</svg>\n")
	return b.String()
}

// targetGain expresses a row's target as a gain (times better), 0 if none.
func targetGain(r *Row) float64 {
	switch r.Target.Kind {
	case Better:
		return r.Target.Value
	case RatioAtMost:
		if r.HigherBetter {
			return r.Target.Value
		}
		return 1 / r.Target.Value
	}
	return 0
}
