package main

import (
	"fmt"
	"path/filepath"

	"github.com/ginformer/ginformer/bench/internal/profcat"
)

// Where the children's CPU goes, from their CPU profiles (see
// bench/internal/profcat): decoding counts as decoding whether the
// snapshot's restore or the wire called it, and the garbage collector's
// work as GC whoever allocated.

var categories = []profcat.Category{
	profcat.Cat("garbage collection (background marking and sweeping, assists)", `^runtime\.(gcBgMarkWorker|bgsweep|bgscavenge|gcAssistAlloc|gcStart)`),
	profcat.Cat("snapshot checksums (CRC-32C)", `^hash/crc32\.`),
	profcat.Cat("snapshot file: read, write, fsync", `SnapshotFile\)\.(Load|Save)`, `^(os|syscall|internal/poll)\.`),
	profcat.Cat("decoding pods: the source's planned protobuf decoder (snapshot and wire)",
		`source/k8s\.(pbDecode|unmarshalAt|\(\*codec\[.*\]\)\.decode|\(\*pbField\)|\(\*shareTable\)|\(\*stringTable\))|^k8s\.io/api.*Unmarshal|^k8s\.io/apimachinery.*Unmarshal`),
	profcat.Cat("encoding pods: the generated marshaller (snapshot)", `^k8s\.io/api/core/v1\..*(Marshal|Size)|protoSnapshotCodec.*AppendEncode`),
	profcat.Cat("snapshot layout (framing, keys, chunks)", `informer\.(decodeSnapshot|encodeSnapshot|writeSnapshot|\(\*SharedInformer\[.*\]\)\.writeSnapshot)|internal/snapshotfmt\.`),
	profcat.Cat("gzip (responses)", `^compress/`),
	profcat.Cat("network: TLS, HTTP/2, syscalls", `^(crypto/|golang\.org/x/net/http2|net/http|vendor/golang\.org/x/(crypto|net)|internal/poll|syscall|net\.)`),
	profcat.Cat("client setup: kubeconfig, rest.Config, clientset", `^k8s\.io/client-go/(tools/clientcmd|rest\.|kubernetes\.NewForConfig)`),
	profcat.Cat("cache build: informer queue, indexer, index values, notifications", `^github\.com/ginformer/ginformer/informer\.`),
	profcat.Cat("Kubernetes source, other (watch, catch-up, known objects)", `^github\.com/ginformer/ginformer/source/k8s\.`),
	profcat.Cat("the benchmark's handler and checks", `^main\.`),
	profcat.Cat("process start (runtime and package init)", `^runtime\.(main|schedinit|doInit)`),
	profcat.Cat("other (scheduler, runtime)", `.`),
}

// profileKinds are the profiles attributed: phase, file suffix, title.
var profileKinds = []struct{ phase, what, title string }{
	{phaseCold, "", "cold: start → synced"},
	{phaseWarm, "", "warm: start → synced"},
	{phaseExpired, "", "expired: start → synced (restore, relist)"},
	{phaseCold, "-stop", "cold: stop (snapshot write)"},
}

// attribute reads the measured children's profiles in dir and returns the
// CPU of each category per child.
func attribute(dir string, runs []childRun) ([]profcat.Row, error) {
	var rows []profcat.Row
	for _, k := range profileKinds {
		var paths []string
		for _, r := range runs {
			if r.Phase == k.phase && r.Run > 0 {
				paths = append(paths, filepath.Join(dir, fmt.Sprintf("%s-run%d%s.pprof", r.Phase, r.Run, k.what)))
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
