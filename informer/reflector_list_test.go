package informer

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReflectorRejectsListWithoutVersion: a list page, or the end marker of
// a streaming list, without a version is an error wrapping
// ErrInvalidVersion, reported and retried with backoff; the reflector never
// applies it and never watches from "".
func TestReflectorRejectsListWithoutVersion(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		name := "list"
		if streaming {
			name = "streaming"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src, store := newScriptSource(), &recordStore{}
				var mu sync.Mutex
				var errs []error
				var times []time.Time
				broken := true
				src.listFn = func(int, ListOptions) (ListPage[string], error) {
					mu.Lock()
					defer mu.Unlock()
					times = append(times, time.Now())
					if broken {
						return ListPage[string]{Items: []string{"a"}}, nil
					}
					return ListPage[string]{Items: []string{"a"}, Version: "5"}, nil
				}
				if streaming {
					src.watchFn = func(ctx context.Context, _ int, opts WatchOptions) (Watcher[string], error) {
						w := NewWatchStream[string](ctx, 10)
						if opts.SendInitialEvents {
							mu.Lock()
							times = append(times, time.Now())
							version := ""
							if !broken {
								version = "5"
							}
							mu.Unlock()
							w.Send(Event[string]{Type: EventAdded, Object: "a", Version: "3"})
							w.Send(Event[string]{Type: EventBookmark, Version: version, InitialEventsEnd: true})
						}
						src.streams <- w
						return w, nil
					}
				}
				r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) {
					o.DisableStreamingList = !streaming
					o.ErrorHandler = func(_ context.Context, err error) {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				})
				stop := runReflector(t, r)
				time.Sleep(10 * time.Second)
				synctest.Wait()
				mu.Lock()
				require.NotEmpty(t, errs)
				for _, err := range errs {
					assert.ErrorIs(t, err, ErrInvalidVersion)
					assert.Contains(t, err.Error(), "carries no version")
				}
				require.GreaterOrEqual(t, len(times), 3, "retried")
				for i := 1; i < len(times); i++ {
					assert.GreaterOrEqual(t, times[i].Sub(times[i-1]), 800*time.Millisecond, "backoff between attempts")
				}
				broken = false
				mu.Unlock()
				assert.Empty(t, store.calls(), "nothing applied")
				for _, w := range src.watchCalls() {
					assert.True(t, w.SendInitialEvents, "no watch from a version (let alone \"\")")
				}
				assert.Equal(t, "", r.LastSyncVersion())

				// Once the source names its versions, the reflector syncs.
				time.Sleep(time.Minute)
				synctest.Wait()
				assert.Equal(t, "5", r.LastSyncVersion())
				stop()
				require.NotEmpty(t, store.calls())
				assert.Equal(t, "replace [a] @5", store.calls()[0])
			})
		})
	}
}

// pageStore is a recordStore that also takes lists page by page.
type pageStore struct {
	recordStore
	pages [][]string
}

func (s *pageStore) BeginList() ListBuilder[string] { return &pageList{s: s} }

type pageList struct {
	s     *pageStore
	pages [][]string
}

func (l *pageList) AddPage(items []string) error {
	l.pages = append(l.pages, items)
	return nil
}

func (l *pageList) Commit(version string) error {
	l.s.mu.Lock()
	l.s.pages = l.pages
	l.s.mu.Unlock()
	var all []string
	for _, p := range l.pages {
		all = append(all, p...)
	}
	return l.s.recordStore.Replace(all, version)
}

// TestReflectorListReceiver: a store implementing ListReceiver gets the
// pages one by one; a list whose continue token expired starts over with a
// new builder, the old one never committed.
func TestReflectorListReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &pageStore{}
		src.listFn = func(n int, opts ListOptions) (ListPage[string], error) {
			switch {
			case n == 1:
				return ListPage[string]{Items: []string{"a", "b"}, Version: "7", Continue: "p2"}, nil
			case n == 2:
				return ListPage[string]{}, errors.Join(errors.New("token gone"), ErrExpired)
			case opts.Limit == 0:
				return ListPage[string]{Items: []string{"a", "b", "c"}, Version: "8"}, nil
			}
			return ListPage[string]{}, errors.New("unexpected")
		}
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) { o.PageSize = 2 })
		stop := runReflector(t, r)
		<-src.streams
		stop()
		assert.Equal(t, [][]string{{"a", "b", "c"}}, store.pages)
		assert.Equal(t, "replace [a b c] @8", store.calls()[0])
	})
}

// TestReflectorStreamingListStreamEndsAfterMarker: a source may close a
// streaming list's stream right after the end marker; the reflector then
// watches from the marker's version, without a relist, an error or a
// backoff.
func TestReflectorStreamingListStreamEndsAfterMarker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		var errs []error
		var mu sync.Mutex
		src.watchFn = func(ctx context.Context, _ int, opts WatchOptions) (Watcher[string], error) {
			w := NewWatchStream[string](ctx, 10)
			if opts.SendInitialEvents {
				w.Send(Event[string]{Type: EventAdded, Object: "a", Version: "3"})
				w.Send(Event[string]{Type: EventBookmark, Version: "5", InitialEventsEnd: true})
				w.Close()
			}
			src.streams <- w
			return w, nil
		}
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) {
			o.ErrorHandler = func(_ context.Context, err error) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
		stop := runReflector(t, r)
		synctest.Wait()
		calls := src.watchCalls()
		require.Len(t, calls, 2, "the streaming list, then a watch")
		assert.True(t, calls[0].SendInitialEvents)
		assert.False(t, calls[1].SendInitialEvents)
		assert.Equal(t, "5", calls[1].Version)
		stop()
		mu.Lock()
		defer mu.Unlock()
		assert.Empty(t, errs)
		assert.Equal(t, []string{"replace [a] @5"}, store.calls())
	})
}
