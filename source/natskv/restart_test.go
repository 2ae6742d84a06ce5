package natskv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/natskv"
	"github.com/ginformer/ginformer/source/natskv/natstest"
)

// retry calls f until it succeeds or 20 s pass: writes while the server
// restarts.
func retry(t *testing.T, f func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		err := f(ctx)
		cancel()
		if err == nil {
			return
		}
		require.True(t, time.Now().Before(deadline), "still failing after 20s: %v", err)
	}
}

// The server restarts (same port, same store) in the middle of a watch and
// of an informer, with writes made while it is down (retried until it is
// back): the watch either goes on without losing or reordering a change, or
// ends (with an Error event, or closed); the informer sees the outage (an
// error of class transient, Health) and converges on the bucket.
func TestServerRestart(t *testing.T) {
	s, err := natstest.Start(natstest.Config{})
	require.NoError(t, err)
	defer s.Close()
	_, js := conn(t, s)
	w := writer{js: js, kv: newBucket(t, js, jetstream.KeyValueConfig{Storage: jetstream.FileStorage})}
	src := newSource(t, natskv.Options[obj]{JetStream: js, Bucket: w.kv.Bucket()})
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(3, 4))
	churn(t, ctx, w, rng, 30)
	rec := newErrorRecorder()
	inf, m := startInformer(t, src, func(o *informer.Options[string, object]) { o.Metrics = rec })

	page, err := src.List(ctx, informer.ListOptions{})
	require.NoError(t, err)
	wt, err := src.Watch(ctx, informer.WatchOptions{Version: page.Version})
	require.NoError(t, err)
	defer wt.Stop()

	var written []string // versions of the writes after the list, in order
	put := func(i int) {
		key := fmt.Sprintf("r%d", i%7)
		b, _ := json.Marshal(obj{Name: key, Gen: i})
		retry(t, func(ctx context.Context) error {
			r, err := w.kv.Put(ctx, key, b)
			if err == nil {
				written = append(written, fmt.Sprint(r))
			}
			return err
		})
	}
	for i := range 20 {
		put(i)
	}
	// The informer's watch is open (it delivered the writes) when the
	// server goes down.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, inf.WaitForVersion(wctx, written[len(written)-1]))
	s.Shutdown()
	restarted := make(chan error, 1)
	go func() { restarted <- s.Restart() }() // while the writes below are retried
	for i := 20; i < 60; i++ {
		put(i)
	}
	require.NoError(t, <-restarted)

	// The raw watch: a prefix of the writes, in order, then either all of
	// them or its end.
	got := 0
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for got < len(written) {
		select {
		case ev, ok := <-wt.Events():
			if !ok {
				t.Logf("watch closed after %d of %d writes", got, len(written))
				got = len(written)
				continue
			}
			switch ev.Type {
			case informer.EventBookmark:
				continue
			case informer.EventError:
				t.Logf("watch ended after %d of %d writes: %v", got, len(written), ev.Err)
				got = len(written)
				continue
			}
			// A put whose acknowledgement the restart lost was retried:
			// the stream may hold it twice, the first unacknowledged.
			switch c := compareVersions(ev.Version, written[got]); {
			case c < 0:
				require.Contains(t, []informer.EventType{informer.EventAdded, informer.EventModified}, ev.Type, "an unacknowledged write at %s", ev.Version)
			case c > 0:
				t.Fatalf("the watch skipped the write at %s: next event at %s", written[got], ev.Version)
			default:
				got++
			}
		case <-timer.C:
			t.Fatalf("watch: %d of %d writes within 30s", got, len(written))
		}
	}

	requireConverged(t, w, inf, m)
	// The outage is counted: the watch ended with ErrTransient (or a
	// request failed with it) and was opened again, or the informer
	// relisted.
	waitFor(t, "a transient error", func() bool { return rec.count(informer.ErrorClassTransient) > 0 })
	h := inf.Health()
	require.Positive(t, h.Errors[informer.ErrorClassTransient])
	require.True(t, h.WatchRestarts > 0 || h.Lists > 1, "watch restarts %d, lists %d", h.WatchRestarts, h.Lists)
}

// WaitReachable returns at once while the server answers, waits while it
// is down, and returns once it is back.
func TestWaitReachable(t *testing.T) {
	s, err := natstest.Start(natstest.Config{})
	require.NoError(t, err)
	defer s.Close()
	_, js := conn(t, s)
	kv := newBucket(t, js, jetstream.KeyValueConfig{Storage: jetstream.FileStorage})
	src := newSource(t, natskv.Options[obj]{JetStream: js, Bucket: kv.Bucket()})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, src.WaitReachable(ctx))

	s.Shutdown()
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	require.ErrorIs(t, src.WaitReachable(short), context.DeadlineExceeded)
	restarted := make(chan error, 1)
	go func() { restarted <- s.Restart() }()
	require.NoError(t, src.WaitReachable(ctx))
	require.NoError(t, <-restarted)
}
