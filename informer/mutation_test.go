package informer_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

// mutationReports collects what an informer reports through its
// ErrorHandler and Metrics.Error.
type mutationReports struct {
	informer.NoopMetrics
	mu      sync.Mutex
	errs    []error
	classes map[informer.ErrorClass]int
}

func (r *mutationReports) Error(_ string, c informer.ErrorClass) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.classes == nil {
		r.classes = map[informer.ErrorClass]int{}
	}
	r.classes[c]++
}

func (r *mutationReports) handle(_ context.Context, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

// got returns the messages of the errors wrapping ErrCacheMutated and the
// count of the cache_mutation class.
func (r *mutationReports) got(t *testing.T) ([]string, int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var msgs []string
	for _, err := range r.errs {
		require.ErrorIs(t, err, informer.ErrCacheMutated)
		msgs = append(msgs, err.Error())
	}
	return msgs, r.classes[informer.ErrorClassCacheMutation]
}

// publish makes a modification the test goroutine made visible, as far as
// the race detector can tell, to the detector's periodic check: it writes an
// unrelated object, whose commit the check synchronizes with. (synctest
// makes the check's time fake, not its goroutine ordered with the test's.)
func publish[T any](t *testing.T, src *memory.Store[string, T], obj T) {
	t.Helper()
	_, err := src.Put(obj)
	require.NoError(t, err)
	synctest.Wait()
}

// newDetectingInformer returns an informer of src with the mutation
// detector configured by md (Enabled is left to the caller), reporting into
// r, silent in logs.
func newDetectingInformer(t *testing.T, src informer.Source[*item], md informer.MutationDetectorOptions[*item], r *mutationReports) *informer.SharedInformer[string, *item] {
	return newInformer(t, src, func(o *informer.Options[string, *item]) {
		o.MutationDetector = md
		o.ErrorHandler = r.handle
		o.Metrics = r
		o.Logger = logr.FromSlogHandler(slog.DiscardHandler)
	})
}

// TestMutationDetectorPeriodic: an object read from the Lister and modified
// in place is reported at the next periodic check, once, with its key and
// the difference; an unmodified cache reports nothing.
func TestMutationDetectorPeriodic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g1", 1)
		put(t, src, "b", "g1", 1)
		r := &mutationReports{}
		inf := newDetectingInformer(t, src, informer.MutationDetectorOptions[*item]{Enabled: true}, r)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		time.Sleep(3 * time.Second)
		synctest.Wait()
		msgs, n := r.got(t)
		require.Empty(t, msgs, "nothing modified")
		require.Zero(t, n, "nothing modified")

		a, ok := inf.Lister().Get("a")
		require.True(t, ok)
		a.V = 99 // the bug the detector is for
		publish(t, src, &item{Name: "z"})
		time.Sleep(time.Second)
		synctest.Wait()
		msgs, n = r.got(t)
		require.Equal(t, []string{`informer "items": cached object a was modified in place (.V: 1 -> 99): informer: cached object modified in place`}, msgs)
		assert.Equal(t, 1, n)

		time.Sleep(5 * time.Second)
		synctest.Wait()
		msgs, n = r.got(t)
		assert.Len(t, msgs, 1, "reported once")
		assert.Equal(t, 1, n)
	})
}

// TestMutationDetectorWhenReplacedOrDeleted: with no periodic check due, an
// object modified in place (here by a handler, in a map and a string) is
// reported when a newer state replaces it, or when it is deleted.
func TestMutationDetectorWhenReplacedOrDeleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g1", 1)
		put(t, src, "b", "g1", 1)
		r := &mutationReports{}
		inf := newDetectingInformer(t, src, informer.MutationDetectorOptions[*item]{Enabled: true, Interval: time.Hour}, r)
		reg, err := inf.AddHandler(informer.HandlerFuncs[string, *item]{
			AddFunc: func(it *item, _ bool) { it.Group = "mine" },
		}, informer.HandlerOptions{})
		require.NoError(t, err)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf, reg))
		msgs, _ := r.got(t)
		require.Empty(t, msgs)

		put(t, src, "a", "g1", 2) // replaces the modified a: checked as it leaves
		synctest.Wait()
		msgs, _ = r.got(t)
		require.Len(t, msgs, 1)
		assert.Contains(t, msgs[0], `cached object a was modified in place (.Group: "g1" -> "mine")`)

		src.Delete("b")
		synctest.Wait()
		msgs, n := r.got(t)
		require.Len(t, msgs, 2)
		assert.Contains(t, msgs[1], `cached object b was modified in place (.Group: "g1" -> "mine")`)
		assert.Equal(t, 2, n)
		reg.Remove()
	})
}

// TestMutationDetectorEnv: the environment variable turns the detector on
// without code changes; a value it does not know fails construction; unset
// (and Enabled false), nothing is detected.
func TestMutationDetectorEnv(t *testing.T) {
	for _, tt := range []struct {
		env    string
		detect bool
	}{{"", false}, {"false", false}, {"true", true}, {"1", true}} {
		t.Run("env="+tt.env, func(t *testing.T) {
			t.Setenv(informer.MutationDetectorEnv, tt.env)
			synctest.Test(t, func(t *testing.T) {
				src := newSource(t)
				put(t, src, "a", "g1", 1)
				r := &mutationReports{}
				inf := newDetectingInformer(t, src, informer.MutationDetectorOptions[*item]{}, r)
				start(t, inf)
				require.NoError(t, informer.WaitForSync(t.Context(), inf))
				a, _ := inf.Lister().Get("a")
				a.V = 2
				publish(t, src, &item{Name: "z"})
				time.Sleep(2 * time.Second)
				synctest.Wait()
				msgs, _ := r.got(t)
				if tt.detect {
					require.Len(t, msgs, 1)
					assert.Contains(t, msgs[0], "cached object a was modified")
				} else {
					assert.Empty(t, msgs)
				}
			})
		})
	}
	t.Run("bad value", func(t *testing.T) {
		t.Setenv(informer.MutationDetectorEnv, "yes please")
		_, err := informer.NewSharedInformer(informer.Options[string, *item]{Source: newSource(t), KeyFunc: itemKey})
		require.ErrorIs(t, err, informer.ErrInvalidOptions)
		assert.Contains(t, err.Error(), informer.MutationDetectorEnv)
	})
	t.Run("negative interval", func(t *testing.T) {
		_, err := informer.NewSharedInformer(informer.Options[string, *item]{Source: newSource(t), KeyFunc: itemKey,
			MutationDetector: informer.MutationDetectorOptions[*item]{Interval: -1}})
		require.ErrorIs(t, err, informer.ErrInvalidOptions)
	})
}

// TestMutationDetectorCustomCopyAndEqual: a user's Copy and Equal are used
// (the message then has no difference, which only reflection can describe),
// and a panic in Equal is reported rather than crashing the informer.
func TestMutationDetectorCustomCopyAndEqual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g1", 1)
		put(t, src, "bad", "g1", 1)
		r := &mutationReports{}
		var copies, equals sync.Map
		md := informer.MutationDetectorOptions[*item]{
			Enabled: true,
			Copy: func(it *item) *item {
				copies.Store(it.Name, true)
				c := *it
				return &c
			},
			Equal: func(copied, it *item) bool {
				equals.Store(it.Name, true)
				if it.Name == "bad" {
					panic("no")
				}
				return copied.V == it.V // Group is not compared
			},
		}
		inf := newDetectingInformer(t, src, md, r)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		a, _ := inf.Lister().Get("a")
		a.Group = "ignored"
		publish(t, src, &item{Name: "z"})
		time.Sleep(time.Second)
		synctest.Wait()
		r.mu.Lock()
		require.Len(t, r.errs, 1)
		assert.NotErrorIs(t, r.errs[0], informer.ErrCacheMutated)
		assert.Contains(t, r.errs[0].Error(), "Equal of bad: panic: no")
		r.mu.Unlock()
		a.V = 5
		publish(t, src, &item{Name: "z2"})
		time.Sleep(time.Second)
		synctest.Wait()
		r.mu.Lock()
		require.Len(t, r.errs, 2)
		assert.ErrorIs(t, r.errs[1], informer.ErrCacheMutated)
		assert.Contains(t, r.errs[1].Error(), "cached object a was modified in place: ")
		r.mu.Unlock()
		_, ok := copies.Load("a")
		assert.True(t, ok)
		_, ok = equals.Load("a")
		assert.True(t, ok)
	})
}

// TestMutationDetectorDeepCopyMethod: a type with a DeepCopy method is
// copied by it.
func TestMutationDetectorDeepCopyMethod(t *testing.T) {
	copierCopies.Store(0)
	synctest.Test(t, func(t *testing.T) {
		src, err := memory.New(memory.Options[string, *copierItem]{KeyFunc: copierKey})
		require.NoError(t, err)
		t.Cleanup(src.Close)
		_, err = src.Put(&copierItem{Name: "a", Tags: []string{"x"}})
		require.NoError(t, err)
		r := &mutationReports{}
		inf, err := informer.NewSharedInformer(informer.Options[string, *copierItem]{
			Source: src, KeyFunc: copierKey,
			MutationDetector: informer.MutationDetectorOptions[*copierItem]{Enabled: true},
			ErrorHandler:     r.handle, Metrics: r, Logger: logr.FromSlogHandler(slog.DiscardHandler),
		})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- inf.Run(ctx) }()
		require.NoError(t, informer.WaitForSync(ctx, inf))
		a, _ := inf.Lister().Get("a")
		require.Equal(t, int32(1), copierCopies.Load(), "copied once, by DeepCopy")
		a.Tags[0] = "y"
		publish(t, src, &copierItem{Name: "z"})
		time.Sleep(time.Second)
		synctest.Wait()
		msgs, _ := r.got(t)
		require.Equal(t, []string{`informer "informer": cached object a was modified in place (.Tags[0]: "x" -> "y"): informer: cached object modified in place`}, msgs)
		cancel()
		require.NoError(t, <-done)
	})
}

// copierItem has a generated-style DeepCopy, which counts its calls in
// copierCopies.
type copierItem struct {
	Name string
	Tags []string
}

var copierCopies atomic.Int32

func (c *copierItem) DeepCopy() *copierItem {
	copierCopies.Add(1)
	return &copierItem{Name: c.Name, Tags: append([]string(nil), c.Tags...)}
}

func copierKey(c *copierItem) (string, error) { return c.Name, nil }
