package informer_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// captureDefaultLog points slog.Default at a buffer (Info level, as slog's
// own default) for the duration of the test.
func captureDefaultLog(t *testing.T) *syncBuffer {
	buf := &syncBuffer{}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return buf
}

var errDenied = errors.New(`configmaps is forbidden: User "x" cannot list resource "configmaps"`)

// deniedSource fails every list with errDenied.
func deniedSource() informer.Source[*item] {
	return informer.SourceFuncs[*item]{
		ListFunc: func(context.Context, informer.ListOptions) (informer.ListPage[*item], error) {
			return informer.ListPage[*item]{}, errDenied
		},
		WatchFunc: func(context.Context, informer.WatchOptions) (informer.Watcher[*item], error) {
			return nil, errDenied
		},
	}
}

func TestInformerErrorsAreVisibleWithZeroOptions(t *testing.T) {
	buf := captureDefaultLog(t)
	synctest.Test(t, func(t *testing.T) {
		inf, err := informer.NewSharedInformer(informer.Options[string, *item]{Source: deniedSource(), KeyFunc: itemKey})
		require.NoError(t, err)
		start(t, inf)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		err = informer.WaitForSync(ctx, inf)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorIs(t, err, errDenied, "WaitForSync says why")
		assert.Contains(t, err.Error(), `informer "informer" has not synced`)
	})
	out := buf.String()
	assert.Contains(t, out, "level=ERROR")
	assert.Contains(t, out, "cannot list resource")
}

func TestInformerErrorLogIsRateLimited(t *testing.T) {
	buf := captureDefaultLog(t)
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		inf := newInformer(t, src, nil)
		_, err := inf.AddHandler(informer.HandlerFuncs[string, *item]{AddFunc: func(*item, bool) { panic("boom") }}, informer.HandlerOptions{})
		require.NoError(t, err)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		for i := range 100 {
			put(t, src, fmt.Sprint("k", i), "g", 1)
		}
		synctest.Wait()
		assert.LessOrEqual(t, strings.Count(buf.String(), "handler panicked"), 5, "a burst, then nothing for a while")
		time.Sleep(time.Minute)
		put(t, src, "later", "g", 1)
		synctest.Wait()
		assert.Contains(t, buf.String(), "suppressed=", "the next message counts what was left out")
	})
}

func TestInformerStuckHandlerIsReportedOncePerCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		var mu sync.Mutex
		var stuck []error
		var metric int
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) {
			o.StuckHandlerThreshold = 10 * time.Second
			o.ErrorHandler = func(_ context.Context, err error) {
				if errors.Is(err, informer.ErrHandlerStuck) {
					mu.Lock()
					stuck = append(stuck, err)
					mu.Unlock()
				}
			}
			o.Metrics = errorCounter{class: informer.ErrorClassHandlerStuck, n: &metric, mu: &mu}
		})
		release := make(chan struct{})
		_, err := inf.AddHandler(informer.HandlerFuncs[string, *item]{AddFunc: func(it *item, _ bool) {
			if it.Name == "slow" {
				<-release
			}
		}}, informer.HandlerOptions{Name: "slowpoke"})
		require.NoError(t, err)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		put(t, src, "slow", "g", 1)
		synctest.Wait() // the handler is in its call on "slow"
		put(t, src, "next", "g", 1)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		h := inf.Health()
		require.Len(t, h.Handlers, 1)
		assert.Equal(t, "slow", h.Handlers[0].RunningKey)
		assert.Equal(t, 1, h.Handlers[0].Backlog, "next waits behind slow")
		assert.Zero(t, h.Handlers[0].StuckCalls)
		longest, ok := h.LongestCall()
		require.True(t, ok)
		assert.Equal(t, "slowpoke", longest.Name)

		time.Sleep(time.Minute)
		synctest.Wait()
		mu.Lock()
		require.Len(t, stuck, 1, "reported once, however long it runs")
		assert.Contains(t, stuck[0].Error(), `handler "slowpoke"`)
		assert.Contains(t, stuck[0].Error(), "key slow")
		assert.Equal(t, 1, metric)
		mu.Unlock()
		assert.Equal(t, int64(1), inf.Health().Handlers[0].StuckCalls)
		close(release)
		synctest.Wait()
		h = inf.Health()
		assert.Zero(t, h.Handlers[0].Running, "idle")
		_, ok = h.LongestCall()
		assert.False(t, ok)
	})
}

type errorCounter struct {
	informer.NoopMetrics
	class informer.ErrorClass
	n     *int
	mu    *sync.Mutex
}

func (c errorCounter) Error(_ string, class informer.ErrorClass) {
	if class == c.class {
		c.mu.Lock()
		*c.n++
		c.mu.Unlock()
	}
}

func TestInformerHealth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g", 1)
		inf := newInformer(t, src, nil)
		h := inf.Health()
		assert.Equal(t, "items", h.Name)
		assert.False(t, h.Running)
		assert.False(t, h.Synced)
		reg, err := inf.AddHandler(&calls{}, informer.HandlerOptions{Name: "h", Coalesce: true})
		require.NoError(t, err)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf, reg))
		t0 := time.Now()
		time.Sleep(time.Second)
		put(t, src, "b", "g", 1)
		synctest.Wait()
		h = inf.Health()
		assert.True(t, h.Running)
		assert.True(t, h.Synced)
		assert.Equal(t, 2, h.Objects)
		assert.Zero(t, h.QueueDepth)
		assert.False(t, h.LastListAt.IsZero())
		assert.False(t, h.LastListAt.After(t0))
		assert.False(t, h.LastEventAt.Before(t0), "the event came after the list")
		assert.NoError(t, h.LastError)
		assert.Equal(t, []informer.HandlerHealth{{Name: "h", Coalesce: true, Synced: true}}, h.Handlers)
	})
}

func TestInformerRefusesNilsAtConstruction(t *testing.T) {
	inf := newInformer(t, newSource(t), nil)
	var typedNil *calls
	for name, h := range map[string]informer.Handler[string, *item]{
		"nil":                 nil,
		"typed nil":           typedNil,
		"empty HandlerFuncs":  informer.HandlerFuncs[string, *item]{},
		"empty *HandlerFuncs": &informer.HandlerFuncs[string, *item]{},
	} {
		_, err := inf.AddHandler(h, informer.HandlerOptions{})
		assert.ErrorIs(t, err, informer.ErrInvalidOptions, name)
	}

	var nilStore *nilSource
	for name, src := range map[string]informer.Source[*item]{
		"typed nil source":       nilStore,
		"SourceFuncs no funcs":   informer.SourceFuncs[*item]{},
		"*SourceFuncs no watch":  &informer.SourceFuncs[*item]{ListFunc: deniedSource().(informer.SourceFuncs[*item]).ListFunc},
		"SourceFuncs no list fn": informer.SourceFuncs[*item]{WatchFunc: deniedSource().(informer.SourceFuncs[*item]).WatchFunc},
	} {
		_, err := informer.NewSharedInformer(informer.Options[string, *item]{Source: src, KeyFunc: itemKey})
		assert.ErrorIs(t, err, informer.ErrInvalidOptions, name)
	}
}

type nilSource struct{ informer.SourceFuncs[*item] }

func TestInformerRunAfterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf := newInformer(t, newSource(t), nil)
		stop := start(t, inf)
		synctest.Wait()
		assert.ErrorIs(t, inf.Run(t.Context()), informer.ErrAlreadyStarted)
		stop()
		err := inf.Run(t.Context())
		require.ErrorIs(t, err, informer.ErrClosed)
		assert.Contains(t, err.Error(), "has stopped")
		assert.Contains(t, err.Error(), "NewSharedInformer")
	})
}

func TestZeroSharedInformerDoesNotPanic(t *testing.T) {
	var inf informer.SharedInformer[string, *item]
	assert.Zero(t, inf.Lister().Len())
	_, ok := inf.Lister().Get("a")
	assert.False(t, ok)
	assert.False(t, inf.HasSynced())
	assert.Zero(t, inf.QueueDepth())
	assert.Empty(t, inf.Health().Handlers)
	assert.ErrorIs(t, inf.Run(t.Context()), informer.ErrInvalidOptions)
	_, err := inf.AddHandler(&calls{}, informer.HandlerOptions{})
	assert.ErrorIs(t, err, informer.ErrInvalidOptions)
	assert.ErrorIs(t, inf.AddIndexes(byGroup), informer.ErrInvalidOptions)
	assert.ErrorIs(t, inf.WaitForVersion(t.Context(), "1"), informer.ErrInvalidOptions)
}

// orderedFuncs is a SourceFuncs whose versions are decimal, ordered: a
// VersionComparer, for WaitForVersion.
type orderedFuncs struct{ informer.SourceFuncs[*item] }

func (orderedFuncs) CompareVersions(a, b string) (int, error) {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if err := errors.Join(errA, errB); err != nil {
		return 0, fmt.Errorf("%w: %w", informer.ErrInvalidVersion, err)
	}
	return cmp.Compare(x, y), nil
}

func TestWaitForVersionSaysWhyWhenTheSourceFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := orderedFuncs{deniedSource().(informer.SourceFuncs[*item])}
		inf, err := informer.NewSharedInformer(informer.Options[string, *item]{Source: src, KeyFunc: itemKey, Logger: logr.FromSlogHandler(slog.DiscardHandler)})
		require.NoError(t, err)
		start(t, inf)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		err = inf.WaitForVersion(ctx, "7")
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorIs(t, err, errDenied)
	})
}

func TestWaitForSyncOfARegistrationSaysWhichHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g", 1)
		inf := newInformer(t, src, nil)
		h := &calls{gate: make(chan struct{})}
		reg, err := inf.AddHandler(h, informer.HandlerOptions{Name: "gated"})
		require.NoError(t, err)
		start(t, inf)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err = informer.WaitForSync(ctx, inf, reg)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), `handler "gated" has not processed its initial list`)
		assert.Contains(t, err.Error(), "key a")
		close(h.gate)
	})
}

func TestInformerRoutineEventsAreQuietByDefault(t *testing.T) {
	buf := captureDefaultLog(t)
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g", 1)
		src.FailNextList(fmt.Errorf("list: %w", informer.ErrExpired))
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) { o.ListWatch.DisableStreamingList = true })
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		put(t, src, "b", "g", 1)
		synctest.Wait()
	})
	assert.Empty(t, buf.String(), "an expired version and a relist are routine: verbose levels only")
}

func TestInformerLastingOutageBecomesAnError(t *testing.T) {
	buf := captureDefaultLog(t)
	synctest.Test(t, func(t *testing.T) {
		unreachable := fmt.Errorf("connection refused: %w", informer.ErrTransient)
		src := informer.SourceFuncs[*item]{
			ListFunc: func(context.Context, informer.ListOptions) (informer.ListPage[*item], error) {
				return informer.ListPage[*item]{Version: "1"}, nil
			},
			WatchFunc: func(context.Context, informer.WatchOptions) (informer.Watcher[*item], error) {
				return nil, unreachable
			},
		}
		inf, err := informer.NewSharedInformer(informer.Options[string, *item]{Source: &src, KeyFunc: itemKey})
		require.NoError(t, err)
		start(t, inf)
		time.Sleep(3 * time.Second) // two or three retries: routine
		synctest.Wait()
		assert.NotContains(t, buf.String(), "level=ERROR", "a short outage is routine")
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		assert.Contains(t, buf.String(), "level=ERROR", "an outage that lasts needs a person")
		assert.Contains(t, buf.String(), "connection refused")
	})
}
