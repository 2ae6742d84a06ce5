package debughttp_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/informer/debughttp"
	"github.com/ginformer/ginformer/source/memory"
)

// The informers of the rich fixture, in the group's (name) order.
const (
	richConfigs   = "configs"   // restored from a snapshot, not caught up
	richEndpoints = "endpoints" // a handler stuck in a call
	richPods      = "pods"      // never synced: its lists fail
	richServices  = "services"  // healthy, many keys
	richSecrets   = "zsecrets"  // synced, its source down for 50 s (a fake, last)
)

// richServiceCount is the number of keys of the services informer: more
// than two pages of DefaultKeysLimit.
const richServiceCount = 2500

// longVersion is the version the configs informer was restored at: long
// and unbroken, as opaque versions can be, to test wrapping.
var longVersion = "v7-" + strings.Repeat("0123456789abcdef", 10)

// serviceKey returns the key of service i: namespaced, some very long.
func serviceKey(i int) informer.NamespacedKey {
	name := fmt.Sprintf("svc-%05d", i)
	if i%500 == 7 {
		name += "-" + strings.Repeat("averyveryverylongservicename", 6)
	}
	return informer.NamespacedKey{Namespace: fmt.Sprintf("team-%02d", i%12), Name: name}
}

// richFixture serves the page (mounted at /debug/informers, with a metrics
// link to /metrics) over four informers in the states named above, each
// reached before it returns: it waits on channels, never on time; and a
// fake fifth, synced with its source down.
func richFixture(t *testing.T) *httptest.Server {
	t.Helper()
	quiet := logr.FromSlogHandler(slog.DiscardHandler)
	g := informer.NewGroup()

	// endpoints: the "slow" handler blocks in its call on key "a" and is
	// reported stuck; "audit" keeps up.
	eps, err := memory.New(memory.Options[string, *endpoint]{KeyFunc: endpointKey})
	require.NoError(t, err)
	t.Cleanup(eps.Close)
	for _, e := range []*endpoint{{"a", "eu"}, {"b", "eu"}, {"c", "us"}} {
		_, err := eps.Put(e)
		require.NoError(t, err)
	}
	stuck := make(chan struct{}, 1)
	epInf, err := informer.InformerFor(g, informer.Options[string, *endpoint]{
		Name: richEndpoints, Source: eps, KeyFunc: endpointKey, Logger: quiet,
		StuckHandlerThreshold: 50 * time.Millisecond,
		ErrorHandler: func(_ context.Context, err error) {
			if errors.Is(err, informer.ErrHandlerStuck) {
				select {
				case stuck <- struct{}{}:
				default:
				}
			}
		},
		Indexes: []informer.Index[*endpoint]{{Name: "region", Func: func(dst []string, e *endpoint) ([]string, error) {
			return append(dst, e.Region), nil
		}}},
	})
	require.NoError(t, err)
	gate := make(chan struct{})
	_, err = epInf.AddHandler(informer.HandlerFuncs[string, *endpoint]{AddFunc: func(e *endpoint, _ bool) {
		if e.Name == "a" {
			<-gate
		}
	}}, informer.HandlerOptions{Name: "slow", Coalesce: true})
	require.NoError(t, err)
	audit, err := epInf.AddHandler(informer.HandlerFuncs[string, *endpoint]{AddFunc: func(*endpoint, bool) {}}, informer.HandlerOptions{Name: "audit"})
	require.NoError(t, err)

	// pods: every list and watch is refused.
	denied := &informer.SourceFuncs[*pod]{
		ListFunc: func(context.Context, informer.ListOptions) (informer.ListPage[*pod], error) {
			return informer.ListPage[*pod]{}, errors.New("pods are forbidden: User \"system:serviceaccount:ops:ginformer\" cannot list resource \"pods\"")
		},
		WatchFunc: func(context.Context, informer.WatchOptions) (informer.Watcher[*pod], error) {
			return nil, errors.New("pods are forbidden")
		},
	}
	denial := make(chan struct{}, 1)
	_, err = informer.InformerFor(g, informer.Options[informer.NamespacedKey, *pod]{
		Name: richPods, Source: denied, KeyFunc: podKey, Logger: quiet,
		ErrorHandler: func(context.Context, error) {
			select {
			case denial <- struct{}{}:
			default:
			}
		}})
	require.NoError(t, err)

	// services: many keys, healthy.
	svcs, err := memory.New(memory.Options[informer.NamespacedKey, *pod]{KeyFunc: podKey})
	require.NoError(t, err)
	t.Cleanup(svcs.Close)
	for i := range richServiceCount {
		k := serviceKey(i)
		_, err := svcs.Put(&pod{Namespace: k.Namespace, Name: k.Name, Node: fmt.Sprintf("node-%d", i%7)})
		require.NoError(t, err)
	}
	svcInf, err := informer.InformerFor(g, informer.Options[informer.NamespacedKey, *pod]{
		Name: richServices, Source: svcs, KeyFunc: podKey, Logger: quiet,
		Indexes: []informer.Index[*pod]{{Name: "node", Func: func(dst []string, p *pod) ([]string, error) {
			return append(dst, p.Node), nil
		}}},
	})
	require.NoError(t, err)

	// configs: restored from the snapshot a first run left, then watching
	// a source that never says it has caught up.
	resumed := addRestored(t, g, quiet)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Run(ctx) }()
	require.NoError(t, informer.WaitForSync(t.Context(), epInf, audit))
	require.NoError(t, informer.WaitForSync(t.Context(), svcInf))
	<-stuck
	<-denial
	<-resumed

	mux := http.NewServeMux()
	now := time.Now()
	secrets := &fakeInspector{health: informer.Health{
		Name: richSecrets, Running: true, Synced: true, Objects: 3, LivenessBound: 5 * time.Second,
		LastListAt: now.Add(-time.Hour), LastEventAt: now.Add(-52 * time.Second), FailingSince: now.Add(-50 * time.Second),
		LastError: errors.New("secrets: watch: dial tcp 10.0.0.1:2379: connect: connection refused"), LastErrorAt: now.Add(-time.Second),
	}}
	infs := append(debughttp.Informers{}, g.Inspectors()...)
	mux.Handle("/debug/informers", debughttp.Handler(append(infs, secrets), debughttp.WithMetricsLink("/metrics")))
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("# metrics would be here\n"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		close(gate)
		cancel()
		require.NoError(t, <-done)
	})
	return srv
}

// addRestored adds the configs informer to g: a first informer of its
// source lists three objects at longVersion and saves a snapshot when it
// stops; the one added to g restores it and resumes the watch, which never
// delivers anything. The channel returned is signalled when the watch has
// resumed from the snapshot's version (the snapshot is then in Health).
func addRestored(t *testing.T, g *informer.Group, quiet logr.Logger) <-chan struct{} {
	t.Helper()
	file := filepath.Join(t.TempDir(), "configs.snap")
	resumed := make(chan struct{}, 1)
	src := &informer.SourceFuncs[*endpoint]{
		ListFunc: func(context.Context, informer.ListOptions) (informer.ListPage[*endpoint], error) {
			return informer.ListPage[*endpoint]{Version: longVersion, Items: []*endpoint{{"db", "eu"}, {"cache", "eu"}, {"queue", "us"}}}, nil
		},
		WatchFunc: func(ctx context.Context, opts informer.WatchOptions) (informer.Watcher[*endpoint], error) {
			if opts.Version == longVersion {
				select {
				case resumed <- struct{}{}:
				default:
				}
			}
			return newSilentWatcher(ctx), nil
		},
	}
	opts := informer.Options[string, *endpoint]{
		Name: richConfigs, Source: src, KeyFunc: endpointKey, Logger: quiet,
		// The source never marks the catch-up: without this, the informer
		// would give up resuming after 10 s and relist, and a loaded machine
		// reaches the page's checks later than that.
		ListWatch: informer.ListWatchOptions{StreamingListTimeout: time.Hour},
		Snapshot: informer.SnapshotOptions[*endpoint]{
			Store: informer.NewSnapshotFile(file), Codec: informer.JSONCodec[*endpoint]{}, Interval: -1,
		},
	}
	first, err := informer.NewSharedInformer(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- first.Run(ctx) }()
	require.NoError(t, informer.WaitForSync(ctx, first))
	cancel()
	require.NoError(t, <-done) // Run saves the snapshot before it returns
	select {
	case <-resumed: // the first run's watch, from the listed version
	default:
	}
	_, err = informer.InformerFor(g, opts)
	require.NoError(t, err)
	return resumed
}

// silentWatcher delivers nothing until stopped or its context is done.
type silentWatcher struct {
	events chan informer.Event[*endpoint]
	stop   chan struct{}
	once   chan struct{}
}

func newSilentWatcher(ctx context.Context) *silentWatcher {
	w := &silentWatcher{events: make(chan informer.Event[*endpoint]), stop: make(chan struct{}), once: make(chan struct{}, 1)}
	w.once <- struct{}{}
	go func() {
		select {
		case <-ctx.Done():
		case <-w.stop:
		}
		close(w.events)
	}()
	return w
}

func (w *silentWatcher) Events() <-chan informer.Event[*endpoint] { return w.events }

func (w *silentWatcher) Stop() {
	select {
	case <-w.once:
		close(w.stop)
	default:
	}
}
