package main

import (
	"fmt"
	"strings"

	"github.com/ginformer/ginformer/bench/internal/profcat"
)

// Where the children's CPU goes, from their CPU profiles: every sample is
// given to the first category whose patterns all match a function of its
// stack (leaf to root), so that, for example, JSON decoding counts as
// decoding whether the source or the snapshot restore called it, and the
// garbage collector's work (background marking, assists) as GC whoever
// allocated.

var categories = []profcat.Category{
	profcat.Cat("garbage collection (background marking and sweeping, assists)", `^runtime\.(gcBgMarkWorker|bgsweep|bgscavenge|gcAssistAlloc|gcStart)`),
	profcat.Cat("decoding values: encoding/json", `^encoding/json\.(Unmarshal|\(\*decodeState\)|checkValid|\(\*Decoder\))`),
	profcat.Cat("encoding values: encoding/json", `^encoding/json\.(Marshal|\(\*encodeState\))`),
	profcat.Cat("snapshot checksums (CRC-32C)", `^hash/crc32\.`),
	profcat.Cat("snapshot file: read, write, fsync", `SnapshotFile\)\.(Load|Save)`, `^(os|syscall|internal/poll)\.`),
	profcat.Cat("copying each value before decoding it (bytes.Clone in etcd's snapshot codec)", `^bytes\.Clone`, `etcd\.snapshotCodec`),
	profcat.Cat("snapshot layout and etcd's snapshot codec (framing, keys)", `informer\.(decodeSnapshot|encodeSnapshot)|internal/snapshotfmt\.|etcd\.snapshotCodec`),
	profcat.Cat("network: gRPC, HTTP/2, protobuf, etcd client, syscalls", `^(google\.golang\.org/grpc|golang\.org/x/net/http2|google\.golang\.org/protobuf|go\.etcd\.io/etcd/(api|client)|internal/poll|syscall|net\.)`),
	profcat.Cat("cache build: informer queue, indexer, index values, notifications", `^github\.com/ginformer/ginformer/informer\.`),
	profcat.Cat("etcd source, other (events, hand-offs)", `^github\.com/ginformer/ginformer/source/etcd\.`),
	profcat.Cat("the benchmark's handler and checks", `^main\.`),
	profcat.Cat("process start (runtime and package init)", `^runtime\.(main|schedinit|doInit)`),
	profcat.Cat("other (scheduler, runtime)", `.`),
}

// profileRow is the CPU of one category in one kind of profile, per child
// (the mean over the runs).
type profileRow = profcat.Row

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
		var paths []string
		for _, f := range files {
			if f.phase == k.phase+k.what {
				paths = append(paths, f.path)
			}
		}
		r, err := profcat.Attribute(k.title, paths, categories)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// writeProfiles writes the attribution as a table: one column per kind of
// profile, CPU ms per child and share.
func writeProfiles(b *strings.Builder, rows []profileRow) { profcat.WriteTable(b, rows, categories) }
