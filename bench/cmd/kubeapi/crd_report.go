package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// crdRatios are the -crd table's ratio columns: ginformer against
// client-go with the stripping transform (what a careful user adds) and
// at its defaults, and the projections against each other and against
// client-go's full objects.
var crdRatios = [][2]string{
	{colCRDGinformer, colCRDStrip},
	{colCRDGinformer, colCRDClientGo},
	{colCRDProjection, colCRDSlim},
	{colCRDProjection, colCRDClientGo},
}

// writeCRD writes the -crd mode's report: the table of write with the
// rows named per object, and crdRatios.
func (r *report) writeCRD(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Custom resource informer against a real kube-apiserver, one process per library\n\n")
	compression := "gzip where the server compresses (the default)"
	if r.cfg.NoCompression {
		compression = "uncompressed (-no-compression: DisableCompression on every child)"
	}
	fmt.Fprintf(&b, "%d workloads (custom resource %s/%s, %.1f KB JSON each as served, managedFields of two managers), "+
		"created in %s; wire format: JSON (CRDs are served as JSON), %s; %d runs per column, rotating which goes first, "+
		"one child process per run; cells are medians. Watch phase: %d status merge patches from %d writers. Took %s.\n\n",
		r.cfg.Pods, crdGroup, crdVersion, r.jsonSize/1e3, r.createTook.Round(time.Second), compression,
		r.cfg.Runs, r.cfg.Updates, r.cfg.UpdateWriters, r.took.Round(time.Second))
	e := r.env
	fmt.Fprintf(&b, "Machine: %s, %d cores, GOMAXPROCS=%d (shared by the apiserver, etcd, the writers and the child); %s; "+
		"client-go %s; kube-apiserver %s; load average %s at start, %s at end.\n\n",
		e.CPU, e.Cores, e.MaxProcs, e.Go, e.ClientGo, r.server, e.LoadStart, e.LoadEnd)
	b.WriteString("| measure | unit |")
	for _, p := range r.participants {
		fmt.Fprintf(&b, " %s |", p.name)
	}
	for _, q := range crdRatios {
		fmt.Fprintf(&b, " %s / %s |", q[0], q[1])
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(r.participants)+len(crdRatios)) + "\n")
	for _, row := range rows {
		fmt.Fprintf(&b, "| %s | %s |", strings.ReplaceAll(row.name, "pod", "object"), row.unit)
		for _, p := range r.participants {
			fmt.Fprintf(&b, " %s |", num(r.median(p.name, row.get)))
		}
		for _, q := range crdRatios {
			x, y := r.median(q[0], row.get), r.median(q[1], row.get)
			ratio := "–"
			if x > 0 && y > 0 {
				ratio = fmt.Sprintf("%.2f", x/y)
			}
			fmt.Fprintf(&b, " %s |", ratio)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nclient-go: cache.NewSharedIndexInformer over a cache.ListWatch of a rest.RESTClient for the CRD's " +
		"group and version with the scheme's JSON codecs for the Go type (what controller-runtime's typed cache builds), " +
		"at its defaults, with a transform that strips managedFields, and with one that builds the slim type; client-go " +
		"dynamic: dynamicinformer (unstructured); ginformer: k8s.NewForConfig with the full type and with the slim type " +
		"(metadata, cluster, containers' names and images, phase). CPU, allocations, heap and latencies are measured as " +
		"in the pod table.\n")
	b.WriteString("\nPer run (sync wall ms / sync CPU ms / watch events seen, matched):\n\n")
	for _, p := range r.participants {
		var parts []string
		for _, m := range r.results[p.name] {
			s := fmt.Sprintf("%.0f / %.0f / %d, %d", m.syncWallMS, m.syncCPUMS, m.seen, m.matched)
			if m.timedOut {
				s += " (timed out)"
			}
			parts = append(parts, s)
		}
		fmt.Fprintf(&b, "- %s: %s\n", p.name, strings.Join(parts, "; "))
	}
	b.WriteString("\nResponses the children received (kind, Content-Type, whether Go's transport decompressed gzip):\n\n")
	for _, p := range r.participants {
		for _, k := range slices.Sorted(maps.Keys(r.wire[p.name])) {
			fmt.Fprintf(&b, "- %s: %s (×%d)\n", p.name, k, r.wire[p.name][k])
		}
	}
	_, _ = io.WriteString(w, b.String())
}
