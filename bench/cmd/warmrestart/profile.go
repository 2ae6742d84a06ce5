package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/google/pprof/profile"
)

// Where the children's CPU goes, from their CPU profiles: every sample is
// given to the first category whose patterns all match a function of its
// stack (leaf to root), so that, for example, JSON decoding counts as
// decoding whether the source or the snapshot restore called it, and the
// garbage collector's work (background marking, assists) as GC whoever
// allocated.

// category is a share of the CPU named by the functions on the stack.
type category struct {
	name string
	all  []*regexp.Regexp // each must match some frame
}

func cat(name string, patterns ...string) category {
	c := category{name: name}
	for _, p := range patterns {
		c.all = append(c.all, regexp.MustCompile(p))
	}
	return c
}

var categories = []category{
	cat("garbage collection (background marking and sweeping, assists)", `^runtime\.(gcBgMarkWorker|bgsweep|bgscavenge|gcAssistAlloc|gcStart)`),
	cat("decoding values: encoding/json", `^encoding/json\.(Unmarshal|\(\*decodeState\)|checkValid|\(\*Decoder\))`),
	cat("encoding values: encoding/json", `^encoding/json\.(Marshal|\(\*encodeState\))`),
	cat("snapshot checksums (CRC-32C)", `^hash/crc32\.`),
	cat("snapshot file: read, write, fsync", `SnapshotFile\)\.(Load|Save)`, `^(os|syscall|internal/poll)\.`),
	cat("copying each value before decoding it (bytes.Clone in etcd's snapshot codec)", `^bytes\.Clone`, `etcd\.snapshotCodec`),
	cat("snapshot layout and etcd's snapshot codec (framing, keys)", `informer\.(decodeSnapshot|encodeSnapshot|encodeChunk)|etcd\.snapshotCodec`),
	cat("network: gRPC, HTTP/2, protobuf, etcd client, syscalls", `^(google\.golang\.org/grpc|golang\.org/x/net/http2|google\.golang\.org/protobuf|go\.etcd\.io/etcd/(api|client)|internal/poll|syscall|net\.)`),
	cat("cache build: informer queue, indexer, index values, notifications", `^github\.com/ginformer/ginformer/informer\.`),
	cat("etcd source, other (events, hand-offs)", `^github\.com/ginformer/ginformer/source/etcd\.`),
	cat("the benchmark's handler and checks", `^main\.`),
	cat("process start (runtime and package init)", `^runtime\.(main|schedinit|doInit)`),
	cat("other (scheduler, runtime)", `.`),
}

// profileRow is the CPU of one category in one kind of profile, per child
// (the mean over the runs).
type profileRow struct {
	Profile  string  `json:"profile"` // e.g. "cold sync"
	Category string  `json:"category"`
	Seconds  float64 `json:"seconds"`
	Share    float64 `json:"share"`
}

// profileKinds are the profiles attributed: file name suffix and title.
var profileKinds = []struct{ phase, what, title string }{
	{phaseCold, "", "cold: start → synced (list)"},
	{phaseWarm, "", "warm: start → synced (restore)"},
	{phaseCompacted, "", "compacted: start → synced (restore, relist)"},
	{phaseCold, "-stop", "cold: stop (snapshot write)"},
	{throughputPeriodic, "", "throughput, periodic snapshots: the writes"},
	{throughputAtStop, "", "throughput, at stop only: the writes"},
}

// attribute reads the measured children's profiles in dir and returns the
// CPU of each category per child.
func attribute(dir string, runs []childRun, tputs []throughputRun) ([]profileRow, error) {
	// Every profile written, by kind: phase and runs.
	var files []struct{ phase, path string }
	for _, r := range runs {
		files = append(files, struct{ phase, path string }{r.Phase, fmt.Sprintf("%s/%s-run%d.pprof", dir, r.Phase, r.Run)})
		files = append(files, struct{ phase, path string }{r.Phase + "-stop", fmt.Sprintf("%s/%s-run%d-stop.pprof", dir, r.Phase, r.Run)})
	}
	for _, t := range tputs {
		files = append(files, struct{ phase, path string }{t.kind(), fmt.Sprintf("%s/%s-run%d.pprof", dir, t.kind(), t.Run)})
	}
	var rows []profileRow
	for _, k := range profileKinds {
		secs := make([]float64, len(categories))
		n := 0
		for _, f := range files {
			if f.phase != k.phase+k.what {
				continue
			}
			p, err := readProfile(f.path)
			if err != nil {
				return nil, err
			}
			n++
			for i, v := range classify(p) {
				secs[i] += v
			}
		}
		if n == 0 {
			continue
		}
		total := 0.0
		for _, s := range secs {
			total += s
		}
		for i, c := range categories {
			if secs[i] > 0 {
				rows = append(rows, profileRow{Profile: k.title, Category: c.name, Seconds: secs[i] / float64(n), Share: secs[i] / total})
			}
		}
	}
	return rows, nil
}

func readProfile(path string) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return profile.Parse(f)
}

// classify returns the CPU seconds of p in each category.
func classify(p *profile.Profile) []float64 {
	vi := len(p.SampleType) - 1 // cpu/nanoseconds
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			vi = i
		}
	}
	out := make([]float64, len(categories))
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
		for i, c := range categories {
			if matchesAll(c, frames) {
				out[i] += float64(s.Value[vi]) / 1e9
				break
			}
		}
	}
	return out
}

func matchesAll(c category, frames []string) bool {
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

// writeProfiles writes the attribution as a table: one column per kind of
// profile, CPU ms per child and share.
func writeProfiles(b *strings.Builder, rows []profileRow) {
	var titles []string
	cells := map[string]map[string]profileRow{}
	for _, r := range rows {
		if cells[r.Profile] == nil {
			titles = append(titles, r.Profile)
			cells[r.Profile] = map[string]profileRow{}
		}
		cells[r.Profile][r.Category] = r
	}
	b.WriteString("\nWhere the CPU goes, from the children's CPU profiles (ms per child, mean of the runs, and share of the profile; " +
		"each sample counts in the first category whose functions are on its stack):\n\n| category |")
	for _, t := range titles {
		b.WriteString(" " + t + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(titles)) + "\n")
	for _, c := range categories {
		line := "| " + c.name + " |"
		any := false
		for _, t := range titles {
			if r, ok := cells[t][c.name]; ok {
				line += fmt.Sprintf(" %.0f (%.0f%%) |", r.Seconds*1e3, r.Share*100)
				any = true
			} else {
				line += " – |"
			}
		}
		if any {
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
