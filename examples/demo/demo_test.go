package demo

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNewEndpointIsDeterministic(t *testing.T) {
	a, b := NewRand(), NewRand()
	for i := range 10 {
		if x, y := NewEndpoint(a, i), NewEndpoint(b, i); x != y || x.Service != ServiceOf(i) {
			t.Fatalf("endpoint %d: %+v and %+v", i, x, y)
		}
	}
}

func TestCountFirst(t *testing.T) {
	seq := slices.Values([]int{3, 1, 2, 5})
	if n := Count(seq); n != 4 {
		t.Fatalf("Count = %d, want 4", n)
	}
	if got := First(seq, 3); !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Fatalf("First = %v", got)
	}
}

// TestRun runs the demo's shared parts over a memory source: the informer
// syncs, the writer's changes reach the counter, stop ends the run.
func TestRun(t *testing.T) {
	key := func(e *Endpoint) (string, error) { return e.Service + "/" + e.Name, nil }
	src, err := memory.New(memory.Options[string, *Endpoint]{KeyFunc: key})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	byRegion := informer.NewIndex("region", func(dst []string, e *Endpoint) ([]string, error) { return ByRegion(dst, *e) })
	byStatus := informer.NewIndex("status", func(dst []string, e *Endpoint) ([]string, error) { return ByStatus(dst, *e) })
	inf, err := informer.NewSharedInformer(informer.Options[string, *Endpoint]{
		Name: "endpoints", Source: src, KeyFunc: key,
		Indexes: []informer.Index[*Endpoint]{byRegion, byStatus},
	})
	if err != nil {
		t.Fatal(err)
	}
	region, err := inf.Lister().IndexRef(byRegion)
	if err != nil {
		t.Fatal(err)
	}
	status, err := inf.Lister().IndexRef(byStatus)
	if err != nil {
		t.Fatal(err)
	}
	d := &Demo{Duration: 20 * time.Millisecond, Quiet: true}
	counter, err := inf.AddHandler(Counter[string, *Endpoint](d), informer.HandlerOptions{Name: "counter"})
	if err != nil {
		t.Fatal(err)
	}
	first := NewEndpoint(NewRand(), 0) // in the initial list: the counter has seen it once synced
	if _, err := src.Put(&first); err != nil {
		t.Fatal(err)
	}
	stop, err := Start(t.Context(), d, inf, counter)
	if err != nil {
		t.Fatal(err)
	}
	rng := NewRand()
	writes, err := d.Write(func() error {
		e := NewEndpoint(rng, rng.IntN(50))
		_, err := src.Put(&e)
		return err
	}, func(elapsed time.Duration) { Progress(d, elapsed, inf.Lister(), region, status) })
	if err != nil || writes == 0 {
		t.Fatalf("Write = %d, %v", writes, err)
	}
	if err := WaitForVersion(t.Context(), inf, src.Version()); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if err := d.Finish(inf.Lister().Len(), writes, time.Second, "", "cache equals source"); err != nil {
		t.Fatal(err)
	}
	if err := d.Finish(0, writes, time.Second, "x differs", "cache equals source"); err == nil {
		t.Fatal("Finish with a mismatch returned nil")
	}
	if d.events.Load() == 0 {
		t.Fatal("the counter saw no events")
	}
}
