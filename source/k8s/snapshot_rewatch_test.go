package k8s_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// TestWarmRestartRewatches: an informer restarted from its snapshot
// resumes without a list and then, like a cold-started one, re-watches
// rather than relists when its watches end: at their timeout (1–2 s here,
// several times over) and when the connection to kube-apiserver is cut for
// a while. When kube-apiserver itself restarts, its new watch cache starts
// at etcd's current revision, so a watch from an older version may be
// refused as expired (410), and a re-watch the stopping server accepted
// may end at once (a very short watch): the one relist allowed then, as
// for a cold start (client-go relists in both cases too). Writes made meanwhile arrive and the cache ends equal to the
// server's. It has its own control plane, which it restarts.
func TestWarmRestartRewatches(t *testing.T) {
	needEnv(t)
	own, err := k8stest.Start(k8stest.Config{APIServerArgs: map[string][]string{
		"request-timeout":                         {"5s"},
		"shutdown-watch-termination-grace-period": {"1s"},
	}})
	require.NoError(t, err)
	defer own.Stop()
	ns := snapshotPods(t, own, own.Client, 20)
	path := filepath.Join(t.TempDir(), "pods.snap")
	ctx := t.Context()
	pods := own.Client.CoreV1().Pods(ns)
	// Both informers go through the proxy: the snapshot's identity names
	// the server's address.
	px := newCutProxy(t, own.Config.Host)
	cfg := rest.CopyConfig(own.Config)
	cfg.Host = "https://" + px.addr()
	_, _, stop := runPodInformer(t, cfg, ns, path, informer.ListWatchOptions{}, newPodRecorder())
	stop()
	// relabel changes a pod and returns its new resourceVersion, retrying
	// while the apiserver restarts.
	relabel := func(i int, value string) string {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, waitFor)
		defer cancel()
		for {
			p, err := pods.Get(wctx, realisticPod(i).Name, metav1.GetOptions{})
			if err == nil {
				p.Labels["rollout"] = value
				if p, err = pods.Update(wctx, p, metav1.UpdateOptions{}); err == nil {
					return p.ResourceVersion
				}
			}
			if wctx.Err() != nil {
				require.NoError(t, err, "relabel %d", i)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	relabel(1, "while-down")

	errs := &rewatchErrors{}
	inf, _, _ := runPodInformer(t, cfg, ns, path, informer.ListWatchOptions{MinWatchTimeout: time.Second}, newPodRecorder(), errs.record)
	h := inf.Health()
	require.NotEmpty(t, h.RestoredVersion, "restored from the snapshot")
	require.Zero(t, h.Lists, "resumed without a list (last error: %v)", h.LastError)

	// waitRewatches waits for n more watches to end and be re-opened.
	waitRewatches := func(n int64, what string) {
		t.Helper()
		from := inf.Health().WatchRestarts
		require.Eventually(t, func() bool { return inf.Health().WatchRestarts >= from+n }, 3*waitFor, 50*time.Millisecond,
			"%s: %d watches re-opened", what, n)
	}
	noRelist := func(what string) {
		t.Helper()
		h := inf.Health()
		require.Zero(t, h.Lists, "%s: relisted (watch restarts %d, last error: %v)", what, h.WatchRestarts, h.LastError)
	}
	waitForVersion := func(v, what string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 3*waitFor)
		defer cancel()
		require.NoError(t, inf.WaitForVersion(wctx, v), what)
	}

	waitRewatches(4, "watch timeouts")
	noRelist("after 4 watch timeouts")
	waitForVersion(relabel(2, "after-timeouts"), "a write after the watch timeouts")
	noRelist("after a write")

	// An outage: every connection cut, none accepted for a while.
	px.cut(true)
	relabel(3, "during-outage")
	time.Sleep(2 * time.Second) // the informer's re-watches fail meanwhile
	px.cut(false)
	waitForVersion(relabel(4, "after-outage"), "a write after the outage")
	waitRewatches(2, "after the outage")
	noRelist("after the outage")

	before := errs.len()
	require.NoError(t, own.StopAPIServer())
	require.NoError(t, own.StartAPIServer())
	waitForVersion(relabel(5, "after-restart"), "a write after the apiserver restart")
	waitRewatches(3, "after the apiserver restart")
	if h := inf.Health(); h.Lists > 0 {
		// What relists a cold-started informer too: the new watch cache
		// refused the version as expired, or the server going down closed a
		// re-watch at once (a very short watch, which client-go relists
		// after as well).
		require.EqualValues(t, 1, h.Lists, "one relist at most after the apiserver restart")
		cause := slices.ContainsFunc(errs.since(before), func(err error) bool {
			var short *informer.VeryShortWatchError
			return errors.Is(err, informer.ErrExpired) || errors.As(err, &short)
		})
		require.True(t, cause, "the relist after the apiserver restart had an expired version or a very short watch as its cause; errors: %v", errs.since(before))
		t.Logf("relisted after the apiserver restart; errors since: %v", errs.since(before))
	}
	requireCacheEqual(t, inf.Lister(), serverPods(t, own.Client, ns, false), "at the end")
}

// rewatchErrors records the errors an informer reports.
type rewatchErrors struct {
	mu   sync.Mutex
	errs []error
}

func (l *rewatchErrors) record(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

func (l *rewatchErrors) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.errs)
}

func (l *rewatchErrors) since(i int) []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errs[i:])
}

// cutProxy forwards TCP connections to a server, and can cut them all and
// refuse new ones for a while (an outage between client and server).
type cutProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	// mu guards the fields below.
	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

// newCutProxy forwards to the host of serverURL ("https://127.0.0.1:N")
// until t ends.
func newCutProxy(t *testing.T, serverURL string) *cutProxy {
	t.Helper()
	u, err := url.Parse(serverURL)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		_ = ln.Close()
		p.cut(true)
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

// cut closes every connection and refuses new ones while down.
func (p *cutProxy) cut(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			_ = c.Close()
		}
	}
}

// track records c, or closes it when down; false if closed.
func (p *cutProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *cutProxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	_ = c.Close()
}

func (p *cutProxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(in) {
			continue
		}
		p.wg.Go(func() {
			defer p.untrack(in)
			out, err := net.Dial("tcp", p.target)
			if err != nil || !p.track(out) {
				if out != nil {
					_ = out.Close()
				}
				return
			}
			defer p.untrack(out)
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
			go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
			<-done
			p.untrack(in)
			p.untrack(out)
			<-done
		})
	}
}
