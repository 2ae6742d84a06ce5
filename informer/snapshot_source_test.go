package informer_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ginformer/ginformer/informer"
)

// snapItem is the object of the warm-restart tests.
type snapItem struct {
	Name string
	Val  int
	Ver  int64 // the revision of its last change
}

func snapKey(it *snapItem) (string, error) {
	if it.Name == "" {
		return "", errors.New("no name")
	}
	return it.Name, nil
}

// How a histSource answers WatchOptions.NotifyCaughtUp.
const (
	caughtUpMark        = iota // the marker, once replayed
	caughtUpUnsupported        // errors.ErrUnsupported
	caughtUpIgnored            // no marker ever (a source that predates it)
	caughtUpHeld               // the marker once the test closes release
)

// histSource is a versioned source with a full history, so that a watch
// may start from any version not compacted: what a restored informer
// resumes from. It is a SnapshotSource with the JSON codec.
type histSource struct {
	identity string
	mode     int
	release  chan struct{} // caughtUpHeld: the marker waits for it

	mu        sync.Mutex
	rev       int64
	objs      map[string]*snapItem
	log       []informer.Event[*snapItem] // every change, oldest first
	compacted int64                       // a watch from below this is expired
	changed   chan struct{}               // closed and replaced on each change
	lists     int
	watches   []informer.WatchOptions
	down      bool          // an outage: watches fail with ErrTransient
	cut       chan struct{} // closed and replaced by endWatches and an outage
}

func newHistSource() *histSource {
	return &histSource{identity: "hist", objs: map[string]*snapItem{}, changed: make(chan struct{}), release: make(chan struct{}), cut: make(chan struct{})}
}

func (h *histSource) put(name string, val int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rev++
	it := &snapItem{Name: name, Val: val, Ver: h.rev}
	typ := informer.EventModified
	if _, ok := h.objs[name]; !ok {
		typ = informer.EventAdded
	}
	h.objs[name] = it
	h.appendLocked(informer.Event[*snapItem]{Type: typ, Object: it, Version: strconv.FormatInt(h.rev, 10)})
}

func (h *histSource) del(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old, ok := h.objs[name]
	if !ok {
		return
	}
	h.rev++
	delete(h.objs, name)
	h.appendLocked(informer.Event[*snapItem]{Type: informer.EventDeleted, Object: &snapItem{Name: name, Val: old.Val, Ver: h.rev}, Version: strconv.FormatInt(h.rev, 10)})
}

func (h *histSource) appendLocked(ev informer.Event[*snapItem]) {
	h.log = append(h.log, ev)
	close(h.changed)
	h.changed = make(chan struct{})
}

// endWatches ends every open watch normally, as a server's watch timeout
// or a restarting proxy would.
func (h *histSource) endWatches() {
	h.mu.Lock()
	close(h.cut)
	h.cut = make(chan struct{})
	h.mu.Unlock()
}

// outage ends every open watch with a transient error and fails new ones
// (down), or ends the outage.
func (h *histSource) outage(down bool) {
	h.mu.Lock()
	h.down = down
	if down {
		close(h.cut)
		h.cut = make(chan struct{})
	}
	h.mu.Unlock()
}

// compact makes every version before the current one expire.
func (h *histSource) compact() {
	h.mu.Lock()
	h.compacted = h.rev
	h.mu.Unlock()
}

// state returns the source's objects by name.
func (h *histSource) state() map[string]snapItem {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := make(map[string]snapItem, len(h.objs))
	for k, v := range h.objs {
		m[k] = *v
	}
	return m
}

func (h *histSource) calls() (lists int, watches []informer.WatchOptions) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lists, append([]informer.WatchOptions(nil), h.watches...)
}

func (h *histSource) List(_ context.Context, _ informer.ListOptions) (informer.ListPage[*snapItem], error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down {
		return informer.ListPage[*snapItem]{}, fmt.Errorf("hist: down: %w", informer.ErrTransient)
	}
	h.lists++
	page := informer.ListPage[*snapItem]{Version: strconv.FormatInt(h.rev, 10)}
	for _, it := range h.objs {
		page.Items = append(page.Items, it)
	}
	return page, nil
}

func (h *histSource) Watch(ctx context.Context, opts informer.WatchOptions) (informer.Watcher[*snapItem], error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.watches = append(h.watches, opts)
	if opts.SendInitialEvents {
		return nil, fmt.Errorf("hist: %w", errors.ErrUnsupported)
	}
	v, err := strconv.ParseInt(opts.Version, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("hist: version %q: %w", opts.Version, informer.ErrInvalidOptions)
	}
	if v < h.compacted {
		return nil, fmt.Errorf("hist: version %d compacted at %d: %w", v, h.compacted, informer.ErrExpired)
	}
	if h.down {
		return nil, fmt.Errorf("hist: down: %w", informer.ErrTransient)
	}
	if opts.NotifyCaughtUp && h.mode == caughtUpUnsupported {
		return nil, fmt.Errorf("hist: caught-up marker: %w", errors.ErrUnsupported)
	}
	pos := 0 // the first change after v
	for pos < len(h.log) && mustInt(h.log[pos].Version) <= v {
		pos++
	}
	markAt, markVer := len(h.log), h.rev
	mark := opts.NotifyCaughtUp && h.mode != caughtUpIgnored
	w := informer.NewWatchStream[*snapItem](ctx, 0)
	cut := h.cut
	var timeout <-chan time.Time // the watch ends normally after opts.Timeout
	if opts.Timeout > 0 {
		t := time.NewTimer(opts.Timeout)
		timeout = t.C
	}
	go func() {
		defer w.Close()
		for {
			if mark && pos >= markAt {
				if h.mode == caughtUpHeld {
					select {
					case <-h.release:
					case <-w.Done():
						return
					}
				}
				if !w.Send(informer.Event[*snapItem]{Type: informer.EventBookmark, Version: strconv.FormatInt(markVer, 10), InitialEventsEnd: true}) {
					return
				}
				mark = false
			}
			h.mu.Lock()
			var next []informer.Event[*snapItem]
			if pos < len(h.log) {
				end := len(h.log)
				if mark {
					end = markAt
				}
				next = h.log[pos:end]
			}
			changed := h.changed
			h.mu.Unlock()
			for _, ev := range next {
				if !w.Send(ev) {
					return
				}
				pos++
			}
			if len(next) > 0 || (mark && pos >= markAt) {
				continue
			}
			select {
			case <-changed:
			case <-timeout:
				return
			case <-cut:
				h.mu.Lock()
				down := h.down
				h.mu.Unlock()
				if down {
					w.Send(informer.Event[*snapItem]{Type: informer.EventError, Err: fmt.Errorf("hist: down: %w", informer.ErrTransient)})
				}
				return
			case <-w.Done():
				return
			}
		}
	}()
	return w, nil
}

func mustInt(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

// ObjectVersion makes relists drop what did not change.
func (h *histSource) ObjectVersion(it *snapItem) string { return strconv.FormatInt(it.Ver, 10) }

func (h *histSource) SnapshotIdentity(context.Context) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down {
		return "", fmt.Errorf("hist: down: %w", informer.ErrTransient)
	}
	return h.identity, nil
}

func (h *histSource) SnapshotCodec() informer.Codec[*snapItem] {
	return informer.JSONCodec[*snapItem]{}
}

// CompareVersions orders the source's revisions, for WaitForVersion.
func (s *histSource) CompareVersions(a, b string) (int, error) {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	if err := errors.Join(errA, errB); err != nil {
		return 0, fmt.Errorf("%w: %w", informer.ErrInvalidVersion, err)
	}
	return cmp.Compare(x, y), nil
}
