package sliceload

import (
	"errors"
	"testing"
	"testing/synctest"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
)

// forwardRun is one Forward goroutine under test, fed through inner.
type forwardRun struct {
	tr      Tracker
	inner   *informer.WatchStream[int]
	out     *informer.WatchStream[int]
	changed chan struct{}
	done    chan struct{}
}

// startForward starts Forward of slice generation gen, keeping even objects
// only.
func startForward(t *testing.T, gen uint64, initial bool) *forwardRun {
	r := &forwardRun{
		inner:   informer.NewWatchStream[int](t.Context(), 16),
		out:     informer.NewWatchStream[int](t.Context(), 0),
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	go func() {
		defer close(r.done)
		Forward(&r.tr, testSource, shard.Slice{Gen: gen}, initial, r.changed, r.out, r.inner,
			func(ev informer.Event[int]) bool { return ev.Object%2 == 0 })
	}()
	return r
}

// receive returns the events out delivers until it is closed.
func (r *forwardRun) receive() []informer.Event[int] {
	var got []informer.Event[int]
	for ev := range r.out.Events() {
		got = append(got, ev)
	}
	return got
}

// stopped reports whether Forward stopped inner.
func (r *forwardRun) stopped() bool {
	select {
	case <-r.inner.Done():
		return true
	default:
		return false
	}
}

func TestForwardFiltersObjectEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startForward(t, 1, false)
		for _, ev := range []informer.Event[int]{
			{Type: informer.EventAdded, Object: 1},
			{Type: informer.EventAdded, Object: 2},
			{Type: informer.EventModified, Object: 3},
			{Type: informer.EventModified, Object: 4},
			{Type: informer.EventDeleted, Object: 5},
			{Type: informer.EventDeleted, Object: 6},
			{Type: informer.EventBookmark, Object: 7, Version: "9"}, // not filtered
		} {
			r.inner.Send(ev)
		}
		r.inner.Close()
		got := r.receive()
		<-r.done
		want := []informer.Event[int]{
			{Type: informer.EventAdded, Object: 2},
			{Type: informer.EventModified, Object: 4},
			{Type: informer.EventDeleted, Object: 6},
			{Type: informer.EventBookmark, Object: 7, Version: "9"},
		}
		if len(got) != len(want) {
			t.Fatalf("forwarded %v, want %v", got, want)
		}
		for i := range want {
			if got[i].Type != want[i].Type || got[i].Object != want[i].Object || got[i].Version != want[i].Version {
				t.Fatalf("event %d: %+v, want %+v", i, got[i], want[i])
			}
		}
		if !r.stopped() {
			t.Fatal("inner not stopped")
		}
	})
}

func TestForwardEnds(t *testing.T) {
	tests := []struct {
		name    string
		end     func(r *forwardRun)
		wantErr bool // the last event is an Error event wrapping ErrRelistRequested and ErrExpired
	}{
		{name: "slice changed", end: func(r *forwardRun) { close(r.changed) }, wantErr: true},
		{name: "inner error", end: func(r *forwardRun) {
			r.inner.Send(informer.Event[int]{Type: informer.EventError, Err: informer.ErrRelistRequested})
		}, wantErr: true},
		{name: "inner ends", end: func(r *forwardRun) { r.inner.Close() }},
		{name: "out stopped", end: func(r *forwardRun) { r.out.Stop() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := startForward(t, 4, false)
				tt.end(r)
				var got []informer.Event[int]
				if tt.name != "out stopped" {
					got = r.receive()
				}
				<-r.done
				if !r.stopped() {
					t.Fatal("inner not stopped")
				}
				if _, ok := <-r.out.Events(); ok && tt.name == "out stopped" {
					t.Fatal("out delivered an event after Stop")
				}
				if !tt.wantErr {
					if len(got) != 0 {
						t.Fatalf("got %v, want nothing", got)
					}
					return
				}
				if len(got) != 1 || got[0].Type != informer.EventError ||
					!errors.Is(got[0].Err, informer.ErrRelistRequested) {
					t.Fatalf("got %+v, want one Error event wrapping ErrRelistRequested", got)
				}
			})
		})
	}
}

func TestForwardChangedEndsWithEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startForward(t, 4, false)
		close(r.changed)
		got := r.receive()
		<-r.done
		if len(got) != 1 || got[0].Err == nil || got[0].Err.Error() != ended(testSource, 4).Error() {
			t.Fatalf("got %+v, want one Error event %q", got, ended(testSource, 4))
		}
	})
}

func TestForwardRecordsACommittedStreamingList(t *testing.T) {
	for _, initial := range []bool{true, false} {
		name := "plain watch"
		if initial {
			name = "streaming list"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := startForward(t, 3, initial)
				r.inner.Send(informer.Event[int]{Type: informer.EventAdded, Object: 2})
				r.inner.Send(informer.Event[int]{Type: informer.EventBookmark, Version: "12", InitialEventsEnd: true})
				for _, want := range []informer.Event[int]{
					{Type: informer.EventAdded, Object: 2},
					{Type: informer.EventBookmark, Version: "12", InitialEventsEnd: true},
				} {
					ev := <-r.out.Events()
					if ev.Type != want.Type || ev.Version != want.Version || ev.InitialEventsEnd != want.InitialEventsEnd {
						t.Fatalf("%+v, want %+v", ev, want)
					}
				}
				synctest.Wait()
				if got := r.tr.loaded.Gen; got != 0 {
					t.Fatalf("loaded generation %d before the consumer came back after the end marker", got)
				}
				if initial {
					ev := <-r.out.Events()
					if ev.Type != informer.EventBookmark || ev.Version != "12" || ev.InitialEventsEnd {
						t.Fatalf("%+v, want a plain bookmark at version 12", ev)
					}
				}
				synctest.Wait()
				wantGen := uint64(0)
				if initial {
					wantGen = 3
				}
				if got := r.tr.loaded.Gen; got != wantGen {
					t.Fatalf("loaded generation %d, want %d", got, wantGen)
				}
				r.inner.Close()
				if got := r.receive(); len(got) != 0 {
					t.Fatalf("more events: %+v", got)
				}
				<-r.done
			})
		})
	}
}
