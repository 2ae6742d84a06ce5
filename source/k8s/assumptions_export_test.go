package k8s

import (
	"context"
	"errors"
)

// The probes of a NotifyCaughtUp watch (catchup.go), exposed to
// TestApiserverAssumptions, which runs them against the real apiserver.

// ProbeAhead, CatchUpTimeout, CatchUpWatches and ProbeTimeout are
// catchup.go's constants.
const (
	ProbeAhead     = probeAhead
	CatchUpTimeout = catchUpTimeout
	CatchUpWatches = catchUpWatches
	ProbeTimeout   = probeTimeout
)

// ProbeResult is what one probe learnt, read as catchup.go reads it.
type ProbeResult struct {
	Current uint64 // the server's current resourceVersion, if Known
	Known   bool   // Current was read from the answer
	Cached  bool   // the answer came from a watch cache (Retry-After > 0)
	Err     error  // the answer's error (the resource probe's is expected)
}

// errNoPath is returned for a source whose client's path is unknown.
var errNoPath = errors.New("the source has no path (client_path.go)")

// ProbeResource runs src's resource probe at version (catchup.go, probe
// and readProbe).
func ProbeResource[T Object](ctx context.Context, src *Source[T], version string) ProbeResult {
	if src.path == nil {
		return ProbeResult{Err: errNoPath}
	}
	err := src.path.probe(ctx, version)
	r := readProbe(err)
	return ProbeResult{Current: r.current, Known: r.known, Cached: r.cached, Err: err}
}

// ProbeRevision runs src's revision probe (catchup.go, probeRevision).
func ProbeRevision[T Object](ctx context.Context, src *Source[T]) ProbeResult {
	if src.path == nil {
		return ProbeResult{Err: errNoPath}
	}
	r := src.path.probeRevision(ctx)
	return ProbeResult{Current: r.current, Known: r.known, Cached: r.cached, Err: r.err}
}
