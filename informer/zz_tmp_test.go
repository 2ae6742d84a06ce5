package informer

import (
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type tHist struct {
	counts [1400]int64
	n      int64
}

func (h *tHist) add(ns int64) {
	b := 0
	if ns > 1 {
		b = min(int(math.Log(float64(ns))/math.Log(1.02)), 1399)
	}
	h.counts[b]++
	h.n++
}
func (h *tHist) q(q float64) float64 {
	want := int64(math.Ceil(q * float64(h.n)))
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= want {
			return math.Pow(1.02, float64(i+1)) / 1e3
		}
	}
	return 0
}

func TestTmpBatchReaders(t *testing.T) {
	if os.Getenv("TMPB") == "" {
		t.Skip()
	}
	if c, _ := strconv.Atoi(os.Getenv("CHUNK")); c > 0 {
		commitChunk = c
	}
	const n, readers, batch = 100_000, 8, 1000
	pods := benchPods(n)
	s := newTestIndexer(testIndexes()...)
	if err := s.Replace(pods); err != nil {
		t.Fatal(err)
	}
	versions := [2][]*testPod{withVersion(pods, false), pods}
	ref, _ := s.IndexRef(labelsIndex)
	var stop atomic.Bool
	var wg sync.WaitGroup
	hists := make([]tHist, readers)
	for r := range readers {
		wg.Go(func() {
			h := &hists[r]
			i := r * 7
			for !stop.Load() {
				v := "app=app-" + strconv.Itoa(i%(n/100))
				i += 13
				t0 := time.Now()
				c := 0
				for range ref.ByValue(v) {
					c++
				}
				h.add(int64(time.Since(t0)))
				if c != 100 {
					panic(c)
				}
			}
		})
	}
	ws := make([]write[NamespacedKey, *testPod], batch)
	start := time.Now()
	m := 0
	for time.Since(start) < time.Second {
		for i := range ws {
			j := (m + i*97) % n
			_ = s.prepareUpsert(&ws[i], versions[(m/batch)%2][j])
		}
		s.tryCommit(ws, false)
		s.release(ws)
		m += batch
	}
	el := time.Since(start)
	stop.Store(true)
	wg.Wait()
	var all tHist
	for r := range hists {
		for i, c := range hists[r].counts {
			all.counts[i] += c
		}
		all.n += hists[r].n
	}
	t.Logf("chunk %d: writes/s %.0f queries/s %.0f p50 %.2f p99 %.2f p99.9 %.1f µs", commitChunk, float64(m)/el.Seconds(), float64(all.n)/el.Seconds(), all.q(.5), all.q(.99), all.q(.999))
}

func BenchmarkTmpFresh(b *testing.B) {
	pods := benchPods(100_000)
	s0 := newTestIndexer(testIndexes()...)
	ws := make([]write[NamespacedKey, *testPod], len(pods))
	for i, p := range pods {
		_ = s0.prepareUpsert(&ws[i], p)
	}
	for b.Loop() {
		s := newTestIndexer(testIndexes()...)
		d := s.defs.Load()
		for i := range ws {
			ws[i].defs = d
		}
		if s.tryCommit(ws, true) != nil || s.Len() != len(ws) {
			b.Fatal("not applied")
		}
	}
}
