package informer_test

import (
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// metricsRecorder keeps what the informer reports through the Metrics
// methods added for time to sync, applied versions, handler call durations
// and backlogs.
type metricsRecorder struct {
	informer.NoopMetrics
	mu        sync.Mutex
	synced    []time.Duration
	applied   []time.Time
	calls     map[string][]time.Duration // by handler
	backlog   map[string]int             // by handler: the last value
	informers map[string]bool            // the informer names seen
}

func newMetricsRecorder() *metricsRecorder {
	return &metricsRecorder{calls: map[string][]time.Duration{}, backlog: map[string]int{}, informers: map[string]bool{}}
}

func (m *metricsRecorder) Synced(inf string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.informers[inf] = true
	m.synced = append(m.synced, d)
}

func (m *metricsRecorder) VersionApplied(inf string, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.informers[inf] = true
	m.applied = append(m.applied, at)
}

func (m *metricsRecorder) HandlerCallDuration(inf, h string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.informers[inf] = true
	m.calls[h] = append(m.calls[h], d)
}

func (m *metricsRecorder) HandlerBacklog(inf, h string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.informers[inf] = true
	m.backlog[h] = n
}

// In a synctest bubble, durations are exact: the list is delayed by 2 s, a
// handler takes 3 s per call (one of them panics after 1 s) and the backlog
// the processing loop reported while the handler was busy is replaced by 0
// once it has caught up.
func TestInformerReportsSyncVersionsAndHandlerCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g", 1)
		put(t, src, "b", "g", 1)
		src.SetDelay(2 * time.Second)
		m := newMetricsRecorder()
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) {
			o.Metrics = m
			o.StuckHandlerThreshold = -1
			o.Logger = logr.FromSlogHandler(slog.DiscardHandler) // the panic is expected (logr.Discard() is the zero Logger: the default)
		})
		_, err := inf.AddHandler(informer.HandlerFuncs[string, *item]{
			AddFunc: func(it *item, _ bool) {
				if it.Name == "boom" {
					time.Sleep(time.Second)
					panic("boom")
				}
				time.Sleep(3 * time.Second)
			},
		}, informer.HandlerOptions{Name: "slow"})
		require.NoError(t, err)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		synctest.Wait() // the handler is in its first call

		m.mu.Lock()
		assert.Equal(t, []time.Duration{2 * time.Second}, m.synced, "time to first sync: the list's delay")
		require.Len(t, m.applied, 1, "the list's version")
		assert.Equal(t, time.Now(), m.applied[0])
		// The processing loop reports the backlog after waking the handler,
		// which may have started its first call by then (a call in progress
		// is not backlog): the two initial adds, or the one still waiting.
		assert.Contains(t, []int{1, 2}, m.backlog["slow"], "the initial adds queued after the list's batch")
		m.mu.Unlock()

		src.SetDelay(0)
		put(t, src, "boom", "g", 1)
		time.Sleep(30 * time.Second) // less than the source's bookmark interval
		synctest.Wait()

		m.mu.Lock()
		defer m.mu.Unlock()
		assert.Equal(t, []time.Duration{3 * time.Second, 3 * time.Second, time.Second}, m.calls["slow"],
			"two initial adds, then the panicking call; the sync marker is not a call")
		assert.Equal(t, 0, m.backlog["slow"], "caught up")
		assert.Len(t, m.synced, 1)
		assert.Len(t, m.applied, 2, "the list's version, then the put's")
		assert.Equal(t, map[string]bool{"items": true}, m.informers)
	})
}
