package informer

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ginformer/ginformer/internal/deepcopy"
	"github.com/ginformer/ginformer/internal/safecall"
)

// MutationDetectorEnv is the environment variable that turns on the cache
// mutation detector of every informer built while it is set (see
// [MutationDetectorOptions]), so that a test suite can run with it without
// code changes: "true" (or "1", "t", "TRUE", ... as [strconv.ParseBool]
// reads them) reports mutations, "panic" reports them and panics, as
// client-go's KUBE_CACHE_MUTATION_DETECTOR does. "false", "0" or unset leave
// [Options.MutationDetector] in charge. Any other value makes
// [NewSharedInformer] fail.
const MutationDetectorEnv = "GINFORMER_CACHE_MUTATION_DETECTOR"

// MutationDetectorOptions configures the cache mutation detector, a testing
// tool: objects in the cache are shared with the [Lister]'s readers, every
// handler and, for sources such as the memory source, the source itself, so
// modifying one in place silently corrupts the indexes (its index entries no
// longer match it) and whatever else holds it. The detector keeps a deep copy
// of every object the cache stores, made before the object is visible to
// anyone, and compares the object with it: every Interval, and when the object
// leaves the cache (replaced by a newer state, or deleted). A modified object
// is reported once, with its key and the first difference found: an error
// wrapping [ErrCacheMutated] to the ErrorHandler, a log at error level, and
// [Metrics.Error] with [ErrorClassCacheMutation]; then, if Panic is set, a
// panic.
//
// It costs a deep copy per cached write and a deep comparison of the whole
// cache per Interval, and holds a second copy of every object: do not enable
// it in production. Disabled (the zero value, with [MutationDetectorEnv]
// unset), it costs nothing: no copy, no goroutine, one nil check per batch.
//
// It sees modifications made while an object is cached, or when it leaves.
// One made after that (to the old object of an update, say) is not seen,
// nor is one made to an object still in the queue.
type MutationDetectorOptions[T any] struct {
	// Enabled turns the detector on. Zero: off, unless [MutationDetectorEnv]
	// says otherwise.
	Enabled bool
	// Panic makes a detected mutation panic after it is reported, as
	// client-go's detector does: the panic is on the informer's own
	// goroutine, so it ends the program (or test binary). Zero: report only
	// ([MutationDetectorEnv]=panic sets it).
	Panic bool
	// Interval is the time between two comparisons of the whole cache.
	// Zero: one second (client-go's period).
	Interval time.Duration
	// Copy returns a deep copy of obj, sharing nothing obj can reach. Zero:
	// obj.DeepCopy() if T has such a method returning T (Kubernetes API
	// types do), else a copy made by reflection (slow, but any type works).
	Copy func(obj T) T
	// Equal reports whether obj is unchanged from copied, the copy Copy made
	// of it. Zero: [reflect.DeepEqual] (note that it never takes a non-nil
	// func for equal to anything, so objects holding funcs need an Equal).
	Equal func(copied, obj T) bool
}

// mutationDetector is the detector MutationDetectorOptions configures. The
// batch processor (one batch at a time, see processBatch) calls copyWrites
// before a commit and committed after it; run compares the whole cache
// periodically on a goroutine of Run.
type mutationDetector[K comparable, T any] struct {
	name     string // the informer's
	interval time.Duration
	panics   bool
	copyObj  func(T) T
	equal    func(copied, obj T) bool // nil: reflect.DeepEqual
	report   func(error)              // inf.report under ErrorClassCacheMutation

	// recs[i] is the record of the i-th write of the batch being committed,
	// nil if it stores no object (or Copy failed). Only the batch processor
	// uses it.
	recs []*mutationRecord[T]
	// left holds the records that left the cache in the last commit, to be
	// compared once more; only the batch processor uses it.
	left []keyedRecord[K, T]
	// all is run's snapshot of records; only run uses it.
	all []keyedRecord[K, T]

	// mu guards records, the cache's objects by key. User code (Copy, Equal)
	// never runs under it.
	mu      sync.Mutex
	records map[K]*mutationRecord[T]
}

// mutationRecord is an object the cache stored and the copy made of it
// before anyone else could see it. obj and copied never change.
type mutationRecord[T any] struct {
	obj, copied T
	reported    atomic.Bool // a mutation was reported: it is not reported again
}

type keyedRecord[K comparable, T any] struct {
	key K
	rec *mutationRecord[T]
}

// newMutationDetector returns the detector opts and the environment ask
// for, or nil if neither turns it on.
//
// Possible errors: [ErrInvalidOptions] (a bad [MutationDetectorEnv] value, a
// negative Interval).
func newMutationDetector[K comparable, T any](name string, opts MutationDetectorOptions[T], report func(error)) (*mutationDetector[K, T], error) {
	switch env := os.Getenv(MutationDetectorEnv); env {
	case "":
	case "panic":
		opts.Enabled, opts.Panic = true, true
	default:
		on, err := strconv.ParseBool(env)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: want true, false or panic: %w", MutationDetectorEnv, env, ErrInvalidOptions)
		}
		opts.Enabled = opts.Enabled || on
	}
	if opts.Interval < 0 {
		return nil, fmt.Errorf("MutationDetector.Interval is negative: %w", ErrInvalidOptions)
	}
	if !opts.Enabled {
		return nil, nil
	}
	if opts.Interval == 0 {
		opts.Interval = time.Second
	}
	if opts.Copy == nil {
		opts.Copy = defaultCopy[T]()
	}
	return &mutationDetector[K, T]{
		name:     name,
		interval: opts.Interval,
		panics:   opts.Panic,
		copyObj:  opts.Copy,
		equal:    opts.Equal,
		report:   report,
		records:  make(map[K]*mutationRecord[T]),
	}, nil
}

// copyWrites copies the object of every write of ws that stores one, before
// the commit makes it visible. A Copy that panics is reported and its object
// left untracked.
func (d *mutationDetector[K, T]) copyWrites(ws []write[K, T]) {
	d.recs = d.recs[:0]
	for i := range ws {
		w := &ws[i]
		var rec *mutationRecord[T]
		if !w.del && !w.failed {
			c, err := safecall.Call(func(obj T) (T, error) { return d.copyObj(obj), nil }, w.obj)
			if err != nil {
				d.report(fmt.Errorf("informer %q: cache mutation detector: Copy of %v: %w", d.name, w.key, err))
			} else {
				rec = &mutationRecord[T]{obj: w.obj, copied: c}
			}
		}
		d.recs = append(d.recs, rec)
	}
}

// committed records the writes copyWrites was given, now committed, and
// compares the objects they replaced or deleted one last time.
func (d *mutationDetector[K, T]) committed(ws []write[K, T]) {
	d.mu.Lock()
	for i := range ws {
		w := &ws[i]
		if w.failed {
			continue
		}
		if old, ok := d.records[w.key]; ok {
			d.left = append(d.left, keyedRecord[K, T]{w.key, old})
		}
		if rec := d.recs[i]; rec != nil {
			d.records[w.key] = rec
		} else {
			delete(d.records, w.key)
		}
	}
	d.mu.Unlock()
	clear(d.recs)
	for _, r := range d.left {
		d.check(r)
	}
	clear(d.left)
	d.left = d.left[:0]
}

// run compares the whole cache every interval until ctx is done.
func (d *mutationDetector[K, T]) run(ctx context.Context) {
	every(ctx, d.interval, d.checkAll)
}

// checkAll compares every cached object with its copy.
func (d *mutationDetector[K, T]) checkAll() {
	d.mu.Lock()
	for k, r := range d.records {
		d.all = append(d.all, keyedRecord[K, T]{k, r})
	}
	d.mu.Unlock()
	for _, r := range d.all {
		d.check(r)
	}
	clear(d.all)
	d.all = d.all[:0]
}

// check compares r's object with its copy and reports a difference, once per
// record; in panic mode it then panics.
func (d *mutationDetector[K, T]) check(r keyedRecord[K, T]) {
	if r.rec.reported.Load() {
		return
	}
	same, err := safecall.Call(func(rec *mutationRecord[T]) (bool, error) {
		if d.equal != nil {
			return d.equal(rec.copied, rec.obj), nil
		}
		return reflect.DeepEqual(rec.copied, rec.obj), nil
	}, r.rec)
	if err != nil {
		if !r.rec.reported.Swap(true) {
			d.report(fmt.Errorf("informer %q: cache mutation detector: Equal of %v: %w", d.name, r.key, err))
		}
		return
	}
	if same || r.rec.reported.Swap(true) {
		return
	}
	what := "modified in place"
	if d.equal == nil {
		what += " (" + deepcopy.Diff(r.rec.copied, r.rec.obj) + ")"
	}
	err = fmt.Errorf("informer %q: cached object %v was %s: %w", d.name, r.key, what, ErrCacheMutated)
	d.report(err)
	if d.panics {
		panic(err)
	}
}

// The mutation detector's default copy (see [MutationDetectorOptions]): a
// type's own DeepCopy method, else internal/deepcopy's reflection-based copy.

// deepCopier is a type with a Kubernetes-style generated DeepCopy method
// (*corev1.Pod has one).
type deepCopier[T any] interface{ DeepCopy() T }

// defaultCopy returns T's DeepCopy method if T has one, else [deepcopy.Copy].
func defaultCopy[T any]() func(T) T {
	if _, ok := any(*new(T)).(deepCopier[T]); ok {
		return func(v T) T { return any(v).(deepCopier[T]).DeepCopy() }
	}
	return deepcopy.Copy[T]
}
