package workqueue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
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

func bufferLogger(buf *syncBuffer) logr.Logger {
	return funcr.New(func(prefix, args string) { fmt.Fprintln(buf, prefix, args) }, funcr.Options{Verbosity: 1})
}

func TestNewControllerOptions(t *testing.T) {
	ok := func(context.Context, string) error { return nil }
	_, err := NewController[string](nil, ControllerOptions{})
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = NewController(ok, ControllerOptions{Workers: -1})
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = NewController(ok, ControllerOptions{Queue: Options{Backoff: Backoff{Jitter: 3}}})
	require.ErrorIs(t, err, ErrInvalidOptions)
	c, err := NewController(ok, ControllerOptions{Queue: Options{Name: "pods"}})
	require.NoError(t, err)
	require.Equal(t, 1, c.workers)
	require.Equal(t, "pods", c.Queue().Name())

	var zero Controller[string]
	require.ErrorIs(t, zero.Run(context.Background()), ErrInvalidOptions)
}

// Every outcome of a reconcile: success forgets, an error retries with
// backoff and is logged, a panic is recovered as an error, RequeueAfter
// requeues without counting a failure.
func TestControllerOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		calls := map[string][]time.Duration{} // key → times of its reconciles
		start := time.Now()
		fails := map[string]int{"flaky": 3, "panics": 1}
		reconcile := func(ctx context.Context, key string) error {
			mu.Lock()
			calls[key] = append(calls[key], time.Since(start))
			n := len(calls[key])
			mu.Unlock()
			switch {
			case key == "panics" && n <= fails[key]:
				panic("boom")
			case key == "periodic" && n < 3:
				return RequeueAfter(time.Minute)
			case n <= fails[key]:
				return fmt.Errorf("attempt %d failed", n)
			}
			return nil
		}
		var logs syncBuffer
		c, err := NewController(reconcile, ControllerOptions{
			Queue:   Options{Name: "test", Backoff: Backoff{Base: 10 * time.Millisecond, Jitter: -1}},
			Workers: 3,
			Logger:  bufferLogger(&logs),
		})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		defer func() { cancel(); <-done }()
		for _, k := range []string{"ok", "flaky", "panics", "periodic"} {
			c.Queue().Add(k)
		}
		time.Sleep(3 * time.Minute)
		synctest.Wait()

		mu.Lock()
		require.Equal(t, []time.Duration{0}, calls["ok"])
		require.Equal(t, []time.Duration{0, 10 * time.Millisecond, 30 * time.Millisecond, 70 * time.Millisecond}, calls["flaky"],
			"retried after 10, 20, 40 ms")
		require.Equal(t, []time.Duration{0, 10 * time.Millisecond}, calls["panics"])
		require.Equal(t, []time.Duration{0, time.Minute, 2 * time.Minute}, calls["periodic"])
		mu.Unlock()
		for _, k := range []string{"ok", "flaky", "panics", "periodic"} {
			require.Zero(t, c.Queue().NumRequeues(k), "%s: forgotten after success", k)
		}
		out := logs.String()
		require.Equal(t, 3, strings.Count(out, `"controller"="test" "key"="flaky"`), out)
		require.Contains(t, out, `"error"="attempt 3 failed"`)
		require.Contains(t, out, "workqueue: reconcile panicked: panic: boom")
		require.NotContains(t, out, "periodic", "RequeueAfter is not a failure")

		cancel()
		require.NoError(t, <-done)
		done <- nil // for the deferred receive
		require.True(t, c.Queue().ShuttingDown())
		require.ErrorIs(t, c.Run(context.Background()), ErrAlreadyStarted)
	})
}

// Workers never reconcile one key at once, and a key changed during its
// reconcile is reconciled again.
func TestControllerOneWorkerPerKey(t *testing.T) {
	var active [8]atomic.Int32
	var overlap atomic.Bool
	var count [8]atomic.Int32
	release := make(chan struct{})
	reconcile := func(ctx context.Context, k int) error {
		if active[k].Add(1) > 1 {
			overlap.Store(true)
		}
		if count[k].Add(1) == 1 && k == 0 {
			<-release // hold key 0 while it is re-added
		}
		active[k].Add(-1)
		return nil
	}
	c, err := NewController(reconcile, ControllerOptions{Workers: 4, Logger: discard})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	q := c.Queue()
	q.Add(0)
	require.Eventually(t, func() bool { return count[0].Load() == 1 }, 5*time.Second, time.Millisecond)
	for range 100 {
		for k := range 8 {
			q.Add(k)
		}
	}
	time.Sleep(10 * time.Millisecond)
	require.Equal(t, int32(1), count[0].Load(), "key 0 is not reconciled while in progress")
	close(release)
	require.Eventually(t, func() bool { return count[0].Load() == 2 }, 5*time.Second, time.Millisecond, "re-added during its reconcile: reconciled again")
	cancel()
	require.NoError(t, <-done)
	require.False(t, overlap.Load())
}

// Run returns once the queue is drained by the program, with every key
// reconciled; a reconcile interrupted by Run's context is not logged as an
// error.
func TestControllerDrainAndStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		c, err := NewController(func(ctx context.Context, k int) error {
			n.Add(1)
			return nil
		}, ControllerOptions{Workers: 2})
		require.NoError(t, err)
		for k := range 10 {
			c.Queue().Add(k)
		}
		done := make(chan error)
		go func() { done <- c.Run(context.Background()) }()
		require.NoError(t, c.Queue().Drain(context.Background()))
		require.NoError(t, <-done)
		require.Equal(t, int32(10), n.Load())
	})
	synctest.Test(t, func(t *testing.T) {
		var logs syncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		c, err := NewController(func(ctx context.Context, k int) error {
			cancel()
			<-ctx.Done()
			return ctx.Err()
		}, ControllerOptions{Logger: bufferLogger(&logs)})
		require.NoError(t, err)
		c.Queue().Add(1)
		require.NoError(t, c.Run(ctx))
		require.Contains(t, logs.String(), `"level"=1 "msg"="reconcile interrupted by shutdown"`)
		require.NotContains(t, logs.String(), "reconcile failed")
	})
}

// With the zero Logger, errors go to slog's default logger.
func TestControllerDefaultLogger(t *testing.T) {
	var buf syncBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		c, err := NewController(func(context.Context, string) error {
			cancel()
			return errors.New("no such thing")
		}, ControllerOptions{Queue: Options{Name: "things"}})
		require.NoError(t, err)
		c.Queue().Add("x")
		// Run's context ended during the reconcile: logged at V(1), hidden.
		require.NoError(t, c.Run(ctx))
	})
	synctest.Test(t, func(t *testing.T) {
		c, err := NewController(func(context.Context, string) error {
			return errors.New("no such thing")
		}, ControllerOptions{Queue: Options{Name: "things"}})
		require.NoError(t, err)
		c.Queue().Add("x")
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		require.NoError(t, c.Run(ctx))
	})
	require.Contains(t, buf.String(), `level=ERROR msg="reconcile failed; retrying with backoff" controller=things err="no such thing" key=x retries=1`)
	require.NotContains(t, buf.String(), "interrupted", "verbose levels are hidden by default")
}

// What ControllerOptions.Logger says: logr.Discard() is the zero Logger,
// which means slog.Default; logr.FromSlogHandler(slog.DiscardHandler)
// silences the controller.
func TestControllerLoggerDiscard(t *testing.T) {
	var buf syncBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	run := func(name string, l logr.Logger) {
		synctest.Test(t, func(t *testing.T) {
			c, err := NewController(func(context.Context, string) error {
				return errors.New("no such thing")
			}, ControllerOptions{Queue: Options{Name: name}, Logger: l})
			require.NoError(t, err)
			c.Queue().Add("x")
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			require.NoError(t, c.Run(ctx))
		})
	}
	run("discard", logr.Discard())
	run("slog-discard", logr.FromSlogHandler(slog.DiscardHandler))
	require.Contains(t, buf.String(), "controller=discard", "logr.Discard() falls back to slog.Default")
	require.NotContains(t, buf.String(), "controller=slog-discard", "slog.DiscardHandler silences it")
}

// The controller adds no allocation per key to the queue's (none).
func TestControllerProcessAllocs(t *testing.T) {
	c, err := NewController(func(context.Context, string) error { return nil }, ControllerOptions{})
	require.NoError(t, err)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		c.q.Add("k")
		k, _ := c.q.Get(ctx)
		c.process(ctx, k)
	})
	require.Zero(t, allocs)
	c.q.ShutDown()
}
