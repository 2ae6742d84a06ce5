// Package profcat attributes CPU profiles to categories named by the
// functions on each sample's stack: every sample is given to the first
// category whose patterns all match some frame, so that, for example,
// decoding counts as decoding whoever called it, and the garbage
// collector's work (background marking, assists) as GC whoever allocated.
// The benchmark commands use it to say where a child's CPU went.
package profcat

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/google/pprof/profile"
)

// Category is a share of the CPU named by the functions on the stack. Make
// it with [Cat].
type Category struct {
	Name string
	all  []*regexp.Regexp // each must match some frame
}

// Cat returns the category name whose samples have, for each pattern (a
// regexp), a frame whose function name matches it. It panics on a bad
// pattern (categories are package-level tables).
func Cat(name string, patterns ...string) Category {
	c := Category{Name: name}
	for _, p := range patterns {
		c.all = append(c.all, regexp.MustCompile(p))
	}
	return c
}

// Row is the CPU of one category in one kind of profile, per profile (the
// mean over the profiles of that kind).
type Row struct {
	Profile  string  `json:"profile"` // e.g. "cold: start → synced"
	Category string  `json:"category"`
	Seconds  float64 `json:"seconds"`
	Share    float64 `json:"share"`
}

// Attribute reads the profiles at paths, all of one kind (title), and
// returns the mean CPU per profile of each category that has some, in the
// order of cats. No paths: no rows.
//
// Possible errors: a file that cannot be read or parsed.
func Attribute(title string, paths []string, cats []Category) ([]Row, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	secs := make([]float64, len(cats))
	for _, path := range paths {
		p, err := readFile(path)
		if err != nil {
			return nil, err
		}
		for i, v := range Classify(p, cats) {
			secs[i] += v
		}
	}
	total := 0.0
	for _, s := range secs {
		total += s
	}
	var rows []Row
	for i, c := range cats {
		if secs[i] > 0 {
			rows = append(rows, Row{Profile: title, Category: c.Name, Seconds: secs[i] / float64(len(paths)), Share: secs[i] / total})
		}
	}
	return rows, nil
}

func readFile(path string) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Classify returns the CPU seconds of p in each of cats; samples no
// category matches are left out.
func Classify(p *profile.Profile, cats []Category) []float64 {
	vi := len(p.SampleType) - 1 // cpu/nanoseconds
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			vi = i
		}
	}
	out := make([]float64, len(cats))
	var frames []string
	for _, s := range p.Sample {
		frames = frames[:0]
		for _, loc := range s.Location {
			for _, l := range loc.Line {
				if l.Function != nil {
					frames = append(frames, l.Function.Name)
				}
			}
		}
		for i, c := range cats {
			if c.matchesAll(frames) {
				out[i] += float64(s.Value[vi]) / 1e9
				break
			}
		}
	}
	return out
}

func (c Category) matchesAll(frames []string) bool {
	for _, re := range c.all {
		found := false
		for _, f := range frames {
			if re.MatchString(f) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// WriteTable writes rows as a markdown table, one column per kind of
// profile (in the order rows name them) and one line per category of cats
// that has some CPU: ms per profile and share, then the total sampled.
func WriteTable(b *strings.Builder, rows []Row, cats []Category) {
	var titles []string
	cells := map[string]map[string]Row{}
	for _, r := range rows {
		if cells[r.Profile] == nil {
			titles = append(titles, r.Profile)
			cells[r.Profile] = map[string]Row{}
		}
		cells[r.Profile][r.Category] = r
	}
	b.WriteString("\nWhere the CPU goes, from the children's CPU profiles (ms per child, mean of the runs, and share of the profile; " +
		"each sample counts in the first category whose functions are on its stack):\n\n| category |")
	for _, t := range titles {
		b.WriteString(" " + t + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(titles)) + "\n")
	for _, c := range cats {
		line := "| " + c.Name + " |"
		some := false
		for _, t := range titles {
			if r, ok := cells[t][c.Name]; ok {
				line += fmt.Sprintf(" %.0f (%.0f%%) |", r.Seconds*1e3, r.Share*100)
				some = true
			} else {
				line += " – |"
			}
		}
		if some {
			b.WriteString(line + "\n")
		}
	}
	line := "| total sampled |"
	for _, t := range titles {
		total := 0.0
		for _, r := range cells[t] {
			total += r.Seconds
		}
		line += fmt.Sprintf(" %.0f |", total*1e3)
	}
	b.WriteString(line + "\n")
}
