package informer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listTimes records when each List call of src was made and lets the test
// decide, call by call, whether it fails (fail returns nil: it succeeds).
type listTimes struct {
	mu    sync.Mutex
	times []time.Time
	fail  func(n int) error
}

func (l *listTimes) install(src *scriptSource) {
	src.listFn = func(n int, _ ListOptions) (ListPage[string], error) {
		l.mu.Lock()
		l.times = append(l.times, time.Now())
		fail := l.fail
		l.mu.Unlock()
		if err := fail(n); err != nil {
			return ListPage[string]{}, err
		}
		return ListPage[string]{Items: []string{"a"}, Version: fmt.Sprint(n)}, nil
	}
}

func (l *listTimes) at(n int) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.times[n-1]
}

func (l *listTimes) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.times)
}

// The backoff measures failures only: the first failure after the source
// answered waits the initial delay again, however long the backoff had
// grown before (issue 21: it used to wait on from where it was).
func TestReflectorBackoffResetsOnceTheSourceAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		lt := &listTimes{fail: func(n int) error {
			if n <= 6 {
				return errors.New("boom")
			}
			return nil
		}}
		lt.install(src)
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) {
			o.DisableStreamingList = true
			o.ErrorHandler = func(context.Context, error) {}
		})
		stop := runReflector(t, r)
		defer stop()
		w := <-src.streams // list 7 succeeded; the delay had grown past 25 s
		require.Equal(t, 7, lt.count())
		require.GreaterOrEqual(t, lt.at(7).Sub(lt.at(6)), 25600*time.Millisecond)
		failedAt := time.Now()
		require.True(t, w.Send(Event[string]{Type: EventError, Err: errors.New("broken")}))
		<-src.streams
		d := lt.at(8).Sub(failedAt)
		assert.GreaterOrEqual(t, d, 800*time.Millisecond)
		assert.LessOrEqual(t, d, 1600*time.Millisecond, "the backoff starts again from its initial delay")
	})
}

// A relist the source asks for (a sharded source whose slice changed) is no
// failure: it starts at once, every time, and reaches no error handler.
func TestReflectorRelistRequestedStartsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		lt := &listTimes{fail: func(int) error { return nil }}
		lt.install(src)
		var errs []error
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) {
			o.DisableStreamingList = true
			o.ErrorHandler = func(_ context.Context, err error) { errs = append(errs, err) }
		})
		stop := runReflector(t, r)
		defer stop()
		w := <-src.streams
		for i := range 7 {
			time.Sleep(time.Second)
			at := time.Now()
			require.True(t, w.Send(Event[string]{Type: EventError,
				Err: fmt.Errorf("slice changed: %w: %w", ErrRelistRequested, ErrExpired)}))
			w = <-src.streams
			require.Equal(t, at, lt.at(i+2), "relist %d waited", i+1)
		}
		assert.Empty(t, errs)
	})
}

// An expired version is the source answering: the relist starts at once,
// unless the relist before it expired too without a single event (then the
// reflector backs off, so a source that expires every watch is not listed
// in a loop).
func TestReflectorExpiredRelistsAtOnceUnlessItRepeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		lt := &listTimes{fail: func(int) error { return nil }}
		lt.install(src)
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) {
			o.DisableStreamingList = true
			o.ErrorHandler = func(context.Context, error) {}
		})
		stop := runReflector(t, r)
		defer stop()
		expired := Event[string]{Type: EventError, Err: fmt.Errorf("compacted: %w", ErrExpired)}

		w := <-src.streams
		require.True(t, w.Send(Event[string]{Type: EventAdded, Object: "b", Version: "2"}))
		time.Sleep(time.Second)
		at := time.Now()
		require.True(t, w.Send(expired))
		w = <-src.streams
		assert.Equal(t, at, lt.at(2), "after a watch that made progress: at once")

		require.True(t, w.Send(expired)) // no event since the relist
		<-src.streams
		d := lt.at(3).Sub(at)
		assert.GreaterOrEqual(t, d, 800*time.Millisecond, "expired again at once: backs off")
		assert.LessOrEqual(t, d, 1600*time.Millisecond)
	})
}

// reachableSource is a scriptSource that is a ReachabilityWaiter: it is
// reachable once up is closed.
type reachableSource struct {
	*scriptSource
	up    chan struct{}
	waits int // WaitReachable calls; guarded by the scriptSource's mu
}

func (s *reachableSource) WaitReachable(ctx context.Context) error {
	s.mu.Lock()
	s.waits++
	s.mu.Unlock()
	select {
	case <-s.up:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// After an outage long enough for the backoff to grow, the reflector
// retries as soon as the source says it is reachable (not before the
// initial delay), instead of waiting out the rest of its backoff.
func TestReflectorRetriesOnceTheSourceIsReachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &reachableSource{scriptSource: newScriptSource(), up: make(chan struct{})}
		lt := &listTimes{fail: func(n int) error {
			if n <= 7 {
				return fmt.Errorf("unreachable: %w", ErrTransient)
			}
			return nil
		}}
		lt.install(src.scriptSource)
		r := newTestReflector(t, src, &recordStore{}, func(o *ReflectorOptions[string]) {
			o.DisableStreamingList = true
			o.ErrorHandler = func(context.Context, error) {}
		})
		stop := runReflector(t, r)
		defer stop()
		for lt.count() < 7 {
			time.Sleep(time.Second)
		}
		// The pause after list 7 is at least 51.2 s (30 s capped, jitter).
		time.Sleep(5 * time.Second)
		require.Equal(t, 7, lt.count())
		upAt := time.Now()
		close(src.up)
		<-src.streams
		assert.Equal(t, upAt, lt.at(8), "retried as the source became reachable")
	})
}

// Reachability only shortens the wait after an outage; a failure of
// another kind waits its backoff.
func TestReflectorReachabilityIgnoredForOtherFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &reachableSource{scriptSource: newScriptSource(), up: make(chan struct{})}
		close(src.up)
		lt := &listTimes{fail: func(n int) error {
			if n <= 3 {
				return errors.New("forbidden")
			}
			return nil
		}}
		lt.install(src.scriptSource)
		r := newTestReflector(t, src, &recordStore{}, func(o *ReflectorOptions[string]) {
			o.DisableStreamingList = true
			o.ErrorHandler = func(context.Context, error) {}
		})
		stop := runReflector(t, r)
		defer stop()
		<-src.streams
		assert.GreaterOrEqual(t, lt.at(4).Sub(lt.at(3)), 3200*time.Millisecond)
		src.mu.Lock()
		defer src.mu.Unlock()
		assert.Zero(t, src.waits)
	})
}

// Run with a context already done starts nothing and says why, as the
// informer's Run does (issue 21: it returned nil, as after a normal stop).
func TestReflectorRunWithDoneContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newScriptSource()
		r := newTestReflector(t, src, &recordStore{}, nil)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		require.ErrorIs(t, r.Run(ctx), context.Canceled)
		assert.Empty(t, src.listCalls())
		assert.Empty(t, src.watchCalls())
		stop := runReflector(t, r) // it can still run
		<-src.streams
		stop()
	})
}

// TestBackoffRefusesValuesThatAreNoBackoff: an infinite jitter (a hot loop
// of attempts), a cap below the first delay, negative durations and a
// factor that is no number are refused by NewReflector and
// NewSharedInformer, naming the field.
func TestBackoffRefusesValuesThatAreNoBackoff(t *testing.T) {
	for field, b := range map[string]Backoff{
		"Jitter":     {Jitter: math.Inf(1)},
		"Jitter NaN": {Jitter: math.NaN()},
		"Max":        {Initial: time.Second, Max: time.Millisecond},
		"Initial":    {Initial: -time.Second},
		"Max neg":    {Max: -time.Second},
		"ResetAfter": {ResetAfter: -time.Second},
		"Factor":     {Factor: math.Inf(1)},
		"Factor neg": {Factor: -2},
	} {
		name, _, _ := strings.Cut(field, " ")
		err := ListWatchOptions{Backoff: b}.validate()
		require.ErrorIs(t, err, ErrInvalidOptions, field)
		assert.Contains(t, err.Error(), "Backoff."+name, field)
		_, err = NewSharedInformer(Options[string, string]{Source: newScriptSource(), KeyFunc: func(s string) (string, error) { return s, nil },
			ListWatch: ListWatchOptions{Backoff: b}})
		require.ErrorIs(t, err, ErrInvalidOptions, field)
	}
	for _, b := range []Backoff{{}, {Jitter: -1}, {Initial: time.Minute}, {Factor: 0.5}, {Jitter: 1}} {
		require.NoError(t, ListWatchOptions{Backoff: b}.validate(), "%+v", b)
	}
}
