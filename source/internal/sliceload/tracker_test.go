package sliceload

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
)

const testSource = "test sharded source"

// fakeSlicer serves the slice of generation gen (a fresh changed channel per
// generation), or err.
type fakeSlicer struct {
	gen     uint64
	err     error
	changed chan struct{}
	calls   int
}

func (f *fakeSlicer) Slice(context.Context) (shard.Slice, <-chan struct{}, error) {
	f.calls++
	if f.err != nil {
		return shard.Slice{}, nil, f.err
	}
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	return shard.Slice{Gen: f.gen}, f.changed, nil
}

// set moves the slicer to generation gen, closing the old changed channel.
func (f *fakeSlicer) set(gen uint64) {
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
	f.gen = gen
}

// step is one call on a Tracker in TestTrackerSequences.
type step struct {
	op      string // "page", "more" (a continued page), "last", "watch", "stream", "resume", "resumeStream", "loaded"
	gen     uint64 // the slicer's generation before the call ("last", "loaded": the slice passed)
	wantErr bool   // the call fails with ErrRelistRequested and ErrExpired
}

func TestTrackerSequences(t *testing.T) {
	tests := []struct {
		name        string
		steps       []step
		wantLoaded  uint64
		wantListing uint64
	}{
		{name: "zero value", wantLoaded: 0, wantListing: 0},
		{
			name:       "paged list, last page, watch: committed",
			steps:      []step{{op: "page", gen: 1}, {op: "more", gen: 1}, {op: "last", gen: 1}, {op: "watch", gen: 1}},
			wantLoaded: 1, wantListing: 1,
		},
		{
			name:       "watch after a list cut short: not committed",
			steps:      []step{{op: "page", gen: 1}, {op: "watch", gen: 1}},
			wantLoaded: 0, wantListing: 1,
		},
		{
			name:       "a second watch does not commit again",
			steps:      []step{{op: "page", gen: 1}, {op: "last", gen: 1}, {op: "watch", gen: 1}, {op: "loaded", gen: 3}, {op: "watch", gen: 1}},
			wantLoaded: 3, wantListing: 1,
		},
		{
			name:       "slice changed during the list",
			steps:      []step{{op: "page", gen: 1}, {op: "more", gen: 2, wantErr: true}},
			wantLoaded: 0, wantListing: 1,
		},
		{
			name:       "slice changed since the list: the list still counts as committed",
			steps:      []step{{op: "page", gen: 1}, {op: "last", gen: 1}, {op: "watch", gen: 2, wantErr: true}},
			wantLoaded: 1, wantListing: 1,
		},
		{
			name:       "last page of an older list: not committed",
			steps:      []step{{op: "page", gen: 1}, {op: "page", gen: 2}, {op: "last", gen: 1}, {op: "watch", gen: 2}},
			wantLoaded: 0, wantListing: 2,
		},
		{
			name:       "a streaming list lists the current slice; Forward records its commit",
			steps:      []step{{op: "page", gen: 1}, {op: "stream", gen: 2}},
			wantLoaded: 0, wantListing: 2,
		},
		{
			name:       "a streaming list after a paged one replaces it uncommitted",
			steps:      []step{{op: "page", gen: 1}, {op: "last", gen: 1}, {op: "stream", gen: 1}},
			wantLoaded: 0, wantListing: 1,
		},
		{
			name:       "a restored informer's resuming watch is refused",
			steps:      []step{{op: "resume", gen: 1, wantErr: true}},
			wantLoaded: 0, wantListing: 0,
		},
		{
			name:       "a resuming streaming list is served",
			steps:      []step{{op: "resumeStream", gen: 1}},
			wantLoaded: 0, wantListing: 1,
		},
		{
			name:       "an older generation than the one loaded is ignored",
			steps:      []step{{op: "loaded", gen: 2}, {op: "loaded", gen: 1}},
			wantLoaded: 2, wantListing: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr Tracker
			sl := &fakeSlicer{}
			ctx := context.Background()
			for i, s := range tt.steps {
				var err error
				switch s.op {
				case "loaded":
					tr.markLoaded(shard.Slice{Gen: s.gen})
					continue
				case "last":
					tr.LastPage(shard.Slice{Gen: s.gen})
					continue
				}
				sl.set(s.gen)
				var got shard.Slice
				switch s.op {
				case "page", "more":
					got, err = tr.StartPage(ctx, testSource, sl, s.op == "more")
				case "watch", "stream", "resume", "resumeStream":
					opts := informer.WatchOptions{
						SendInitialEvents: s.op == "stream" || s.op == "resumeStream",
						NotifyCaughtUp:    s.op == "resume" || s.op == "resumeStream",
					}
					got, _, err = tr.StartWatch(ctx, testSource, sl, opts)
				default:
					t.Fatalf("step %d: unknown op %q", i, s.op)
				}
				if s.wantErr {
					if !errors.Is(err, informer.ErrRelistRequested) || !errors.Is(err, informer.ErrExpired) || !strings.HasPrefix(err.Error(), testSource+": ") {
						t.Fatalf("step %d (%s): err %v, want %q: ... ErrRelistRequested, ErrExpired", i, s.op, err, testSource)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d (%s): %v", i, s.op, err)
				}
				if got.Gen != s.gen {
					t.Fatalf("step %d (%s): slice generation %d, want %d", i, s.op, got.Gen, s.gen)
				}
			}
			if got := tr.loaded.Gen; got != tt.wantLoaded {
				t.Errorf("loaded generation %d, want %d", got, tt.wantLoaded)
			}
			if got := tr.Listing().Gen; got != tt.wantListing {
				t.Errorf("listing generation %d, want %d", got, tt.wantListing)
			}
		})
	}
}

func TestResumeRefusedWithoutAskingTheSlice(t *testing.T) {
	var tr Tracker
	sl := &fakeSlicer{gen: 1}
	if _, _, err := tr.StartWatch(context.Background(), testSource, sl, informer.WatchOptions{NotifyCaughtUp: true}); err == nil {
		t.Fatal("a resuming plain watch was served")
	}
	if sl.calls != 0 {
		t.Fatalf("the slice was asked %d times, want 0", sl.calls)
	}
}

func TestSlicerErrorsPassThrough(t *testing.T) {
	boom := errors.New("boom")
	var tr Tracker
	sl := &fakeSlicer{err: boom}
	ctx := context.Background()
	if _, err := tr.StartPage(ctx, testSource, sl, false); err != boom {
		t.Errorf("StartPage: %v, want the slicer's error as is", err)
	}
	if _, _, err := tr.StartWatch(ctx, testSource, sl, informer.WatchOptions{}); err != boom {
		t.Errorf("StartWatch: %v, want the slicer's error as is", err)
	}
	_, err := tr.WaitCurrent(ctx, testSource, sl, receivedFunc(nil))
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), testSource+": ") {
		t.Errorf("WaitCurrent: %v, want %q prefixed and wrapping the slicer's error", err, testSource)
	}
}

// receivedFunc is an informer.ReceivedWaiter that returns the error it holds.
type receivedFunc func() error

func (f receivedFunc) WaitForReceived(context.Context) error {
	if f == nil {
		return nil
	}
	return f()
}

func TestWait(t *testing.T) {
	applyErr := errors.New("apply failed")
	tests := []struct {
		name    string
		loaded  uint64 // recorded before the wait; 0: none
		want    uint64
		later   uint64 // recorded once the wait blocks; 0: none
		cancel  bool   // cancel the wait once it blocks
		cache   receivedFunc
		wantGen uint64
		wantErr error
	}{
		{name: "already loaded", loaded: 2, want: 2, wantGen: 2},
		{name: "a later generation loaded", loaded: 3, want: 2, wantGen: 3},
		{name: "loaded while waiting", loaded: 1, want: 2, later: 2, wantGen: 2},
		{name: "an older one loaded while waiting, then cancelled", loaded: 1, want: 3, later: 2, cancel: true, wantErr: context.Canceled},
		{name: "cancelled", want: 1, cancel: true, wantErr: context.Canceled},
		{name: "the cache fails to apply", loaded: 1, want: 1, cache: func() error { return applyErr }, wantErr: applyErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var tr Tracker
				if tt.loaded != 0 {
					tr.markLoaded(shard.Slice{Gen: tt.loaded})
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				var got shard.Slice
				var err error
				done := make(chan struct{})
				go func() {
					defer close(done)
					got, err = tr.Wait(ctx, tt.want, tt.cache)
				}()
				synctest.Wait()
				if tt.later != 0 {
					tr.markLoaded(shard.Slice{Gen: tt.later})
					synctest.Wait()
				}
				if tt.cancel {
					cancel()
				}
				<-done
				if tt.wantErr != nil {
					if !errors.Is(err, tt.wantErr) {
						t.Fatalf("err %v, want %v", err, tt.wantErr)
					}
					return
				}
				if err != nil || got.Gen != tt.wantGen {
					t.Fatalf("Wait: generation %d, %v; want %d", got.Gen, err, tt.wantGen)
				}
			})
		})
	}
}

func TestWaitCurrentWaitsForTheCurrentSlice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr Tracker
		tr.markLoaded(shard.Slice{Gen: 1})
		sl := &fakeSlicer{gen: 2}
		done := make(chan uint64)
		go func() {
			got, err := tr.WaitCurrent(t.Context(), testSource, sl, receivedFunc(nil))
			if err != nil {
				t.Errorf("WaitCurrent: %v", err)
			}
			done <- got.Gen
		}()
		synctest.Wait()
		select {
		case gen := <-done:
			t.Fatalf("WaitCurrent returned generation %d before generation 2 was loaded", gen)
		default:
		}
		tr.markLoaded(shard.Slice{Gen: 2})
		if gen := <-done; gen != 2 {
			t.Fatalf("WaitCurrent: generation %d, want 2", gen)
		}
	})
}

func TestEnded(t *testing.T) {
	err := ended(testSource, 7)
	if !errors.Is(err, informer.ErrRelistRequested) || !errors.Is(err, informer.ErrExpired) {
		t.Fatalf("%v: does not wrap ErrRelistRequested and ErrExpired", err)
	}
	if want := testSource + ": slice changed (generation 7 ended)"; !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("%q, want it to start with %q", err, want)
	}
}
