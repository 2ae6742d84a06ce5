package workqueue

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ginformer/ginformer/informer"
)

// The model: what the queue's contract says, as plain data. Each random
// operation is applied to the queue and to the model; the queue must then
// hand out exactly the keys the model says, in the model's order, report
// the model's Len and NumRequeues, count the model's adds and retries, and
// keep its internal invariants (checkInvariants). Time is synctest's fake
// clock, so delays fire exactly when the model says.

type modelKey struct {
	pending, processing, waiting bool
	due                          time.Duration // since the start, when waiting
	seq                          int           // orders equal due times
	failures                     int
}

type model struct {
	keys    map[int]*modelKey
	ready   []int
	now     time.Duration
	seq     int
	state   queueState
	backoff Backoff
	added   int
	retried int
}

func newModel(b Backoff) *model {
	return &model{keys: map[int]*modelKey{}, backoff: b}
}

func (m *model) key(k int) *modelKey {
	if m.keys[k] == nil {
		m.keys[k] = &modelKey{}
	}
	return m.keys[k]
}

func (m *model) add(k int) {
	if m.state != running {
		return
	}
	mk := m.key(k)
	if mk.pending {
		return
	}
	mk.pending = true
	m.added++
	if !mk.processing {
		m.ready = append(m.ready, k)
	}
}

func (m *model) addAfter(k int, d time.Duration) {
	if m.state != running {
		return
	}
	m.retried++
	if d <= 0 {
		m.add(k)
		return
	}
	mk := m.key(k)
	if !mk.waiting || m.now+d < mk.due {
		m.seq++
		mk.waiting, mk.due, mk.seq = true, m.now+d, m.seq
	}
}

func (m *model) addRateLimited(k int) {
	if m.state != running {
		return
	}
	mk := m.key(k)
	d := m.backoff.Base << mk.failures
	if mk.failures > 40 || d > m.backoff.Max {
		d = m.backoff.Max
	}
	mk.failures++
	m.addAfter(k, d)
}

// advance moves time forward by d, adding the keys that fall due in order.
func (m *model) advance(d time.Duration) {
	m.now += d
	var due []int
	for k, mk := range m.keys {
		if mk.waiting && mk.due <= m.now {
			due = append(due, k)
		}
	}
	slices.SortFunc(due, func(a, b int) int {
		return cmp.Or(cmp.Compare(m.keys[a].due, m.keys[b].due), cmp.Compare(m.keys[a].seq, m.keys[b].seq))
	})
	for _, k := range due {
		m.keys[k].waiting = false
		m.add(k)
	}
}

func (m *model) get() (int, bool) {
	if len(m.ready) == 0 {
		return 0, false
	}
	k := m.ready[0]
	m.ready = m.ready[1:]
	mk := m.keys[k]
	mk.pending, mk.processing = false, true
	return k, true
}

func (m *model) done(k int) {
	mk := m.key(k)
	if !mk.processing {
		return
	}
	mk.processing = false
	if mk.pending {
		m.ready = append(m.ready, k)
	}
}

func (m *model) dropWaiting() {
	for _, mk := range m.keys {
		mk.waiting = false
	}
}

func (m *model) shutDown() {
	m.state = stopped
	m.dropWaiting()
	m.ready = nil
	for _, mk := range m.keys {
		mk.pending = false
	}
}

func (m *model) drain() {
	if m.state == running {
		m.state = draining
		m.dropWaiting()
	}
}

func nsKey(k int) informer.NamespacedKey {
	return informer.NamespacedKey{Namespace: "ns-" + fmt.Sprint(k%3), Name: fmt.Sprintf("obj-%d", k)}
}

// TestQueueModel runs random operation sequences against the queue and the
// model and compares them after every step.
func TestQueueModel(t *testing.T) {
	const seeds, steps = 60, 400
	for seed := range seeds {
		// Few keys: many collisions between operations on one key; many
		// keys: the hash index grows, wraps around and shifts on removal.
		nkeys := []int{3, 10, 40, 300}[seed%4]
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { runModel(t, uint64(seed), steps, nkeys) })
		})
	}
}

func runModel(t *testing.T, seed uint64, steps, nkeys int) {
	rng := rand.New(rand.NewPCG(seed, 13))
	b := Backoff{Base: time.Millisecond, Max: 20 * time.Millisecond, Jitter: -1}
	rec := &recorder{}
	// The model has no retry budget: off, so that a retry's time is its
	// backoff alone.
	q, err := New[informer.NamespacedKey](Options{Name: "model", Backoff: b, Metrics: rec, RetryBudget: RetryBudget{Disable: true}})
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(Backoff{Base: time.Millisecond, Max: 20 * time.Millisecond})
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d after %v: %s", seed, log[max(0, len(log)-12):], fmt.Sprintf(format, args...))
	}
	for step := range steps {
		k := rng.IntN(nkeys)
		key := nsKey(k)
		switch op := rng.IntN(100); {
		case op < 25:
			log = append(log, fmt.Sprint("add ", k))
			q.Add(key)
			m.add(k)
		case op < 32:
			d := time.Duration(rng.IntN(4)) * time.Millisecond
			log = append(log, fmt.Sprint("addAfter ", k, " ", d))
			q.AddAfter(key, d)
			m.addAfter(k, d)
		case op < 40:
			log = append(log, fmt.Sprint("addRateLimited ", k))
			q.AddRateLimited(key)
			m.addRateLimited(k)
		case op < 45:
			log = append(log, fmt.Sprint("forget ", k))
			q.Forget(key)
			if mk := m.keys[k]; mk != nil {
				mk.failures = 0
			}
		case op < 65:
			want, wok := m.get()
			var got informer.NamespacedKey
			var gok bool
			if wok && rng.IntN(2) == 0 {
				got, gok = q.Get(context.Background()) // the blocking path, known not to block
			} else {
				got, gok = q.tryGet()
			}
			log = append(log, fmt.Sprint("get → ", got, gok))
			if gok != wok || gok && got != nsKey(want) {
				fail("Get = %v, %v; model says %v, %v", got, gok, nsKey(want), wok)
			}
		case op < 85:
			// Done, usually for a key in progress.
			if rng.IntN(5) > 0 {
				var inProgress []int
				for k, mk := range m.keys {
					if mk.processing {
						inProgress = append(inProgress, k)
					}
				}
				if len(inProgress) > 0 {
					slices.Sort(inProgress)
					k = inProgress[rng.IntN(len(inProgress))]
				}
			}
			key = nsKey(k)
			log = append(log, fmt.Sprint("done ", k))
			q.Done(key)
			m.done(k)
		case op < 97:
			d := time.Duration(rng.IntN(6)) * time.Millisecond / 2
			log = append(log, fmt.Sprint("sleep ", d))
			time.Sleep(d)
			synctest.Wait()
			m.advance(d)
		case op < 98 && step > steps/2:
			log = append(log, "shutdown")
			q.ShutDown()
			m.shutDown()
		case op < 99 && step > steps/2:
			log = append(log, "drain")
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_ = q.Drain(ctx) // returns at once: ctx is done
			m.drain()
		}
		if err := q.checkInvariants(); err != nil {
			fail("invariant: %v", err)
		}
		if got := q.Len(); got != len(m.ready) {
			fail("Len = %d, model %d", got, len(m.ready))
		}
		want := make([]informer.NamespacedKey, 0, len(m.ready))
		for _, k := range m.ready {
			want = append(want, nsKey(k))
		}
		if got := q.readyKeys(); !slices.Equal(got, want) {
			fail("queued %v, model %v", got, want)
		}
		if got, want := q.NumRequeues(key), m.key(k).failures; got != want {
			fail("NumRequeues(%v) = %d, model %d", key, got, want)
		}
		if got, want := q.ShuttingDown(), m.state != running; got != want {
			fail("ShuttingDown = %v, model %v", got, want)
		}
	}
	if s := rec.snapshot(); s.added != m.added || s.retried != m.retried {
		t.Fatalf("seed %d: metrics counted %d adds, %d retries; model %d, %d", seed, s.added, s.retried, m.added, m.retried)
	}
	q.ShutDown()
}
