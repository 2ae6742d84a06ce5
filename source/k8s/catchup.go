package k8s

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ginformer/ginformer/informer"
)

// The caught-up marker of a plain watch ([informer.WatchOptions.NotifyCaughtUp]).
//
// The apiserver has no request that asks a plain watch to say when it has
// caught up (only a streaming list's end marker, and a streaming list sends
// every object). What it does (k8s.io/apiserver v0.37, pkg/storage/cacher):
//
//   - Its watch cache sends a watcher a bookmark at the cache's current
//     resourceVersion, the last event or etcd progress notification its
//     dispatcher processed, after every event up to it (cacher.go,
//     dispatchEvents). A timer of about 1 s dispatches bookmarks to the
//     watchers whose time has come, in buckets of 1 s: 2 s before the
//     watch's deadline, otherwise once a minute (cache_watcher.go,
//     nextBookmarkTime). A watch with timeoutSeconds=3 gets one 0–2.25 s
//     after it opens (0.9–1.8 s measured on envtest).
//   - But only a bookmark newer than the newest event the watcher was sent
//     from the cache's history when it opened (cache_watcher.go, process:
//     event.ResourceVersion > resourceVersion). When nothing moved the cache
//     past its last event of the resource (no write of the resource, no
//     progress notification from etcd), no bookmark comes, ever.
//   - A GET at a resourceVersion the watch cache has not reached waits up
//     to 3 s for it (watch_cache.go, waitUntilFreshLocked, blockTimeout),
//     asking etcd for a progress notification every 100 ms meanwhile
//     (progress/watch_progress.go): each moves the cache to etcd's current
//     revision, past its last event as soon as anything in the cluster was
//     written since. After 3 s it fails with "Too large resource version:
//     N, current: C" (504, Retry-After 1), C the cache's resourceVersion.
//   - A resource the apiserver does not cache answers that GET at once,
//     from etcd, with etcd's current revision (etcd3/store.go,
//     validateMinimumResourceVersion; Retry-After 0); its watches get no
//     bookmarks. Events (core/v1 and events.k8s.io) are not cached by
//     default (kube-apiserver's DefaultWatchCacheSizes).
//
//   - A list with no resourceVersion is a consistent read: served from
//     the watch cache once it has reached the current revision of the
//     resource's storage, or from that storage. Its version is that
//     revision (or newer), at once.
//
// So a NotifyCaughtUp stream starts with a plain watch from Version with
// timeoutSeconds=3 and, beside it, two probes of the watched resource,
// each asking for a name no object has:
//
//   - the resource probe, a GET at a version the server never reaches
//     (Version + 2^32), which makes its watch cache follow etcd for 3 s (so
//     the watch's bookmark is newer than its last event as soon as anything
//     was written in the cluster), then reports the cache's version; or,
//     answered at once, shows the resource is not cached;
//   - the revision probe, a consistent list of that one name, which
//     reports the current revision of the resource's storage at once (a
//     failure, no list permission in the namespace say, is ignored).
//
// Both read the watched resource's own counter. A revision read from
// another resource (core/v1 events, as before) is another counter
// whenever the two are stored apart: events in an etcd of their own
// (--etcd-servers-overrides=/events#...), or a resource served by an
// aggregated apiserver. Below Version it failed every warm start as
// another cluster's; between Version and the resource's own, it marked the
// catch-up before the watch had delivered every change.
//
// The marker is the first of: the watch's first bookmark (about 1 s); the
// moment the watch has delivered a version at least as new as a probe
// reported (nothing else written since the resource's last change: at
// once, from the revision probe; or when the resource probe answers, after
// 3 s). If the watch ends without it and the watch cache has moved on,
// another such watch follows from the newest version delivered (up to
// catchUpWatches). After the marker, a plain watch from its version, with
// the caller's Timeout, carries the stream on. A resource that is not
// cached is refused with an error wrapping [informer.ErrRelistRequested]
// and [informer.ErrExpired] (returned by Watch when the resource probe
// answers within gateDelay, as it does but over slow links; else as an
// Error event); so is a stream whose first watch ended without a marker
// while the resource probe failed (no get permission). A probe reporting
// a version older than Version shows that Version is not this cluster's:
// [informer.ErrVersionTooLarge].
//
// The resource probe, once the marker is sent, is cancelled, but the
// apiserver's wait does not watch the request's context: its watch cache
// goes on asking etcd for progress notifications (10 a second) until the
// 3 s are up.

// catchUpTimeout is the timeout of the first watches of a NotifyCaughtUp
// stream: the watch cache sends its bookmark 2 s before the deadline.
// Shorter gets none (the bookmark time is past when the watcher is added).
const catchUpTimeout = 3 * time.Second

// catchUpWatches bounds the watches of a NotifyCaughtUp stream that end
// without a marker while the watch cache moves on; then the stream ends
// normally and the informer watches again.
const catchUpWatches = 4

// gateDelay is how long Watch waits for the resource probe's answer before
// it returns, so that a resource that is not cached (answered at once) is
// refused by Watch itself rather than after some events.
const gateDelay = 100 * time.Millisecond

// gateSlack is added to the revision probe's round trip in the gate.
const gateSlack = 5 * time.Millisecond

// probeAhead is added to the watch's version to make the probes': a
// version the server does not reach.
const probeAhead = 1 << 32

// probeName is the name the probes ask for: no object has it (object names
// are lower case), so the revision probe's list is empty (the resource
// probe's version is checked before the name).
const probeName = "Ginformer-Caught-Up-Probe"

// probeTimeout bounds a probe: the watch cache answers after 3 s.
const probeTimeout = 15 * time.Second

// probeResult is what a probe learnt.
type probeResult struct {
	resource bool   // the resource probe's (else the revision probe's)
	current  uint64 // the server's current resourceVersion, if known
	known    bool   // current was read from the answer
	cached   bool   // the answer came from a watch cache, after its wait
	err      error  // the probe's error when known is false
}

// catchUp follows the watches of one NotifyCaughtUp stream and the probes
// of the current one. Only the stream's goroutine uses it, but for the
// probes' goroutines, which send on answers.
type catchUp struct {
	since  uint64 // the stream's version
	newest uint64 // the newest version delivered, or since
	target uint64 // the lowest current version a probe reported; 0: none
	marked bool   // the marker was sent

	answers  chan probeResult   // the probes' answers
	resource *probeResult       // the resource probe's answer, once read
	cancel   context.CancelFunc // ends the probes
	wg       sync.WaitGroup     // the probes' goroutines
}

// probe asks for probeName at version on the resource (see the top of
// this file), once, without retrying (the answer's Retry-After would make
// client-go retry). For a namespaced resource served across namespaces the
// object path needs a namespace: "default" is used.
func (p restPath) probe(ctx context.Context, version string) error {
	get := func(ns string) error {
		return p.request(ns, probeName).Param("resourceVersion", version).MaxRetries(0).Do(ctx).Error()
	}
	err := get(p.namespace)
	if p.namespace == "" && apierrors.IsNotFound(err) {
		err = get(metav1.NamespaceDefault)
	}
	return err
}

// probeRevision reads the current resourceVersion of the resource's own
// storage: a consistent list (no resourceVersion) of the one name probeName,
// which no object has, so the answer is an empty list whose version is the
// current one. The apiserver's registry reads a list selecting one name in
// a namespace as that single key (storage GetList, not recursive), from
// its watch cache once fresh, or from etcd: never the collection. So the
// namespace is needed: the source's, else "default", else none (a
// cluster-scoped resource, whose namespaced path is not found). Once,
// without retrying.
//
// It is the watched resource's counter, whatever serves it: a resource
// stored in an etcd of its own (--etcd-servers-overrides), or served by an
// aggregated apiserver, has a revision of its own, which that of another
// resource (core/v1 events, say) does not tell.
func (p restPath) probeRevision(ctx context.Context) probeResult {
	list := func(ns string) ([]byte, error) {
		return p.request(ns, "").Param("fieldSelector", "metadata.name="+probeName).
			SetHeader("Accept", "application/json").MaxRetries(0).Do(ctx).Raw()
	}
	ns := p.namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	raw, err := list(ns)
	if p.namespace == "" && apierrors.IsNotFound(err) {
		raw, err = list("")
	}
	if err != nil {
		return probeResult{err: err}
	}
	var l struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return probeResult{err: fmt.Errorf("k8s: the revision probe's answer: %w", err)}
	}
	current, err := strconv.ParseUint(l.Metadata.ResourceVersion, 10, 64)
	if err != nil {
		return probeResult{err: fmt.Errorf("k8s: the revision probe's answer has resourceVersion %q", l.Metadata.ResourceVersion)}
	}
	return probeResult{current: current, known: true}
}

// startCatchUp starts the probes of a watch from newest, bounded by ctx,
// before the watch is opened.
func startCatchUp(ctx context.Context, p *restPath, since, newest uint64) *catchUp {
	c := &catchUp{since: since, newest: newest, answers: make(chan probeResult, 2)}
	ctx, c.cancel = context.WithTimeout(ctx, probeTimeout)
	at := strconv.FormatUint(newest+probeAhead, 10)
	c.wg.Go(func() {
		r := readProbe(p.probe(ctx, at))
		r.resource = true
		c.answers <- r
	})
	c.wg.Go(func() { c.answers <- p.probeRevision(ctx) })
	return c
}

// next starts the probes of the stream's next watch, from the newest
// version delivered.
func (c *catchUp) next(ctx context.Context, p *restPath) *catchUp {
	n := startCatchUp(ctx, p, c.since, c.newest)
	n.target = c.target
	return n
}

// stop ends the probes and waits for them.
func (c *catchUp) stop() {
	c.cancel()
	c.wg.Wait()
}

// readProbe reads the current version out of a probe's answer: the
// message "Too large resource version: N, current: C" of
// k8s.io/apiserver's storage.NewTooLargeResourceVersionError, whose
// Retry-After is 1 s from a watch cache and 0 from etcd.
func readProbe(err error) probeResult {
	if !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		if err == nil {
			err = errors.New("the probe found an object")
		}
		return probeResult{err: err}
	}
	msg := err.Error()
	i := strings.LastIndex(msg, "current: ")
	if i < 0 {
		return probeResult{err: err}
	}
	digits := msg[i+len("current: "):]
	if j := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); j >= 0 {
		digits = digits[:j]
	}
	current, perr := strconv.ParseUint(digits, 10, 64)
	if perr != nil {
		return probeResult{err: err}
	}
	delay, _ := apierrors.SuggestsClientDelay(err)
	return probeResult{current: current, known: true, cached: delay > 0}
}

// errUncached refuses a NotifyCaughtUp watch of a resource the apiserver
// does not serve from its watch cache.
var errUncached = fmt.Errorf("k8s: no caught-up marker: the apiserver does not serve this resource from its watch cache, "+
	"whose watches alone get bookmarks: %w: %w", informer.ErrRelistRequested, informer.ErrExpired)

// take records a probe's answer. It returns an error that ends the stream:
// the resource is not cached, or the stream's version is newer than the
// server's.
func (c *catchUp) take(r probeResult) error {
	if r.resource {
		c.resource = &r
		if r.known && !r.cached {
			return errUncached
		}
	}
	if !r.known {
		return nil
	}
	if r.current < c.since {
		return fmt.Errorf("k8s: watch from %d, a resourceVersion the server has not reached (it is at %d): "+
			"one of another cluster or etcd: %w", c.since, r.current, informer.ErrVersionTooLarge)
	}
	if c.target == 0 || r.current < c.target {
		c.target = r.current
	}
	return nil
}

// see records an event of type typ at version, in order, before it is
// sent, and reports whether it is the marker (the first bookmark).
func (c *catchUp) see(typ informer.EventType, version string) (marker bool) {
	if v, err := strconv.ParseUint(version, 10, 64); err == nil && v > c.newest {
		c.newest = v
	}
	if typ != informer.EventBookmark || c.marked {
		return false
	}
	c.mark()
	return true
}

// due reports whether the marker is due at newest: everything up to a
// version a probe reported was delivered.
func (c *catchUp) due() bool { return !c.marked && c.target != 0 && c.newest >= c.target }

// mark records the marker as sent: the probes are of no more use.
func (c *catchUp) mark() {
	c.marked = true
	c.cancel()
}

// outcome is what follows a watch of a NotifyCaughtUp stream that ended.
type outcome uint8

const (
	outcomeMarked  outcome = iota // the marker was sent: a watch with the caller's Timeout
	outcomeAgain                  // another catch-up watch, from the newest version
	outcomeFailed                 // an Error event (err)
	outcomeStopped                // nothing: out was stopped, or an Error event was sent
)

// ended is called when the current watch ended without a marker: it waits
// for the resource probe and says what follows.
func (c *catchUp) ended() (outcome, error) {
	for c.resource == nil {
		if err := c.take(<-c.answers); err != nil {
			return outcomeFailed, err
		}
	}
	r := c.resource
	switch {
	case c.due():
		return outcomeMarked, nil
	case r.known:
		// The watch cache moved on after this watch's bookmark time: the
		// next watch gets a bookmark.
		return outcomeAgain, nil
	}
	return outcomeFailed, fmt.Errorf("k8s: no caught-up marker: no bookmark came, and the probe failed (%v): %w: %w",
		r.err, informer.ErrRelistRequested, informer.ErrExpired)
}
