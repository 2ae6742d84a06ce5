package etcd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
)

// The child process of TestWarmRestartSurvivesSIGKILL reads its settings
// from these variables.
const (
	killChildEnv    = "GINFORMER_WARM_KILL_CHILD" // the etcd endpoint
	killPrefixEnv   = "GINFORMER_WARM_KILL_PREFIX"
	killSnapshotEnv = "GINFORMER_WARM_KILL_SNAPSHOT"
)

// TestWarmKillChild is the child of TestWarmRestartSurvivesSIGKILL: an
// informer over the prefix with a snapshot written every 20 ms, whose
// handler prints every call, one line each ("add K GEN", "update K GEN",
// "delete K", "synced"). On "check REV" on its stdin it waits until its
// cache has applied REV and prints it ("cache {json}"). It does nothing in
// a normal test run.
func TestWarmKillChild(t *testing.T) {
	endpoint := os.Getenv(killChildEnv)
	if endpoint == "" {
		t.Skip("the child of TestWarmRestartSurvivesSIGKILL")
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	require.NoError(t, err)
	defer c.Close()
	src, err := etcd.New(etcd.Options[obj]{Client: c, Prefix: os.Getenv(killPrefixEnv), StripPrefix: true})
	require.NoError(t, err)
	inf, err := informer.NewSharedInformer(informer.Options[string, *etcd.Object[obj]]{
		Source: src, KeyFunc: etcd.KeyFunc[obj], Logger: logr.Discard(),
		Snapshot: informer.SnapshotOptions[*etcd.Object[obj]]{
			Store:    informer.NewSnapshotFile(os.Getenv(killSnapshotEnv)),
			Interval: 20 * time.Millisecond,
		},
	})
	require.NoError(t, err)
	var mu sync.Mutex // one line at a time: a SIGKILL may cut the last one
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(out, format+"\n", args...)
		_ = out.Flush()
		mu.Unlock()
	}
	reg, err := inf.AddHandler(informer.HandlerFuncs[string, *etcd.Object[obj]]{
		AddFunc:    func(o *etcd.Object[obj], _ bool) { say("add %s %d", o.Key, o.Value.Gen) },
		UpdateFunc: func(_, o *etcd.Object[obj]) { say("update %s %d", o.Key, o.Value.Gen) },
		DeleteFunc: func(d informer.Deletion[string, *etcd.Object[obj]]) { say("delete %s", d.Key) },
	}, informer.HandlerOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	if informer.WaitForSync(ctx, inf, reg) == nil {
		say("synced")
		say("restored %q lists %d", inf.Health().RestoredVersion, inf.Health().Lists)
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		rev, ok := strings.CutPrefix(in.Text(), "check ")
		if !ok {
			continue
		}
		require.NoError(t, inf.WaitForVersion(ctx, rev))
		cache := map[string]int{}
		for k, o := range inf.Lister().All() {
			cache[k] = o.Value.Gen
		}
		b, _ := json.Marshal(cache)
		say("cache %s", b)
	}
	cancel()
	<-done
}

// TestWarmRestartSurvivesSIGKILL: a program with a warm-restart snapshot
// (written every 20 ms) is killed with SIGKILL at random moments and
// restarted, 12 times, while a writer updates, deletes and recreates keys
// and etcd is compacted now and then. Every run's handler sees each key's
// generations in increasing order (a key's first call in a run is its
// initial add; a key deleted is never updated before it is added again),
// and the last run's cache equals etcd.
func TestWarmRestartSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 13 processes")
	}
	c := client(t)
	w := writer{c: c, prefix: newPrefix(t)}
	path := filepath.Join(t.TempDir(), "snap")
	const keys = 40
	gen := 0
	var genMu sync.Mutex
	for i := range keys {
		gen++
		_, err := w.put(t.Context(), obj{Name: fmt.Sprintf("k%02d", i), Gen: gen})
		require.NoError(t, err)
	}
	// The writer: generations only grow, across keys and deletes.
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		r := rand.New(rand.NewPCG(7, 11))
		for n := 0; ctx.Err() == nil; n++ {
			name := fmt.Sprintf("k%02d", r.IntN(keys))
			genMu.Lock()
			gen++
			g := gen
			genMu.Unlock()
			var err error
			if r.IntN(10) == 0 {
				_, err = c.Delete(ctx, w.key(name))
			} else {
				_, err = w.put(ctx, obj{Name: name, Gen: g})
			}
			if err == nil && n%500 == 499 {
				if resp, err := c.Get(ctx, "compact-marker"); err == nil {
					_, _ = c.Compact(ctx, resp.Header.Revision) // some restarts relist
				}
			}
			time.Sleep(time.Millisecond) // a steady writer, not a flood: the child must keep up
		}
	})
	r := rand.New(rand.NewPCG(3, 5))
	for round := range 12 {
		p := startKillChild(t, w.prefix, path)
		time.Sleep(time.Duration(200+r.IntN(600)) * time.Millisecond) // a random moment: not an interleaving the test asserts on
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
		_ = p.cmd.Wait()
		lines := p.lines()
		checkOrder(t, round, lines)
		restored := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "restored ") })
		if restored >= 0 {
			t.Logf("round %d: %d lines; %s", round, len(lines), lines[restored])
		} else {
			t.Logf("round %d: %d lines; killed before it synced", round, len(lines))
		}
	}
	stop()
	wg.Wait()

	// The last run: synced, then its cache equals etcd at etcd's revision.
	p := startKillChild(t, w.prefix, path)
	resp, err := c.Get(t.Context(), w.prefix, clientv3.WithPrefix())
	require.NoError(t, err)
	want := map[string]int{}
	for _, kv := range resp.Kvs {
		var o obj
		require.NoError(t, json.Unmarshal(kv.Value, &o))
		want[strings.TrimPrefix(string(kv.Key), w.prefix)] = o.Gen
	}
	fmt.Fprintf(p.stdin, "check %d\n", resp.Header.Revision)
	got := p.waitFor(t, "cache ")
	var cache map[string]int
	require.NoError(t, json.Unmarshal([]byte(got), &cache))
	require.Equal(t, want, cache)
	_ = p.stdin.Close()
	require.NoError(t, p.cmd.Wait())
	checkOrder(t, 12, p.lines())
}

// killChild is a running child of TestWarmRestartSurvivesSIGKILL.
type killChild struct {
	cmd   *exec.Cmd
	stdin interface {
		Write([]byte) (int, error)
		Close() error
	}
	mu   sync.Mutex
	out  []string
	more chan struct{} // signalled on each line
	eof  chan struct{}
}

func startKillChild(t *testing.T, prefix, path string) *killChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWarmKillChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+srv.Endpoint(), killPrefixEnv+"="+prefix, killSnapshotEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	p := &killChild{cmd: cmd, stdin: stdin, more: make(chan struct{}, 1), eof: make(chan struct{})}
	go func() {
		defer close(p.eof)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			p.mu.Lock()
			p.out = append(p.out, sc.Text())
			p.mu.Unlock()
			select {
			case p.more <- struct{}{}:
			default:
			}
		}
	}()
	return p
}

// lines returns what the child printed, once its stdout is closed.
func (p *killChild) lines() []string {
	<-p.eof
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out
}

// waitFor returns the rest of the first line starting with prefix.
func (p *killChild) waitFor(t *testing.T, prefix string) string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		p.mu.Lock()
		for _, l := range p.out {
			if rest, ok := strings.CutPrefix(l, prefix); ok {
				p.mu.Unlock()
				return rest
			}
		}
		p.mu.Unlock()
		select {
		case <-p.more:
		case <-p.eof:
		case <-deadline:
			t.Fatalf("no %q line from the child", prefix)
		}
	}
}

// checkOrder checks one run's handler calls: per key, generations only
// grow; a key's first call is an add; after a delete, the next call is an
// add. A SIGKILL may cut the last line short: a line that does not parse
// ends the check.
func checkOrder(t *testing.T, round int, lines []string) {
	t.Helper()
	last := map[string]int{} // key → last generation seen; absent: not present
	gone := map[string]int{} // key → its generation when it was deleted
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] == "synced" || f[0] == "cache" || f[0] == "restored" {
			continue
		}
		if len(f) < 2 || (f[0] != "delete" && len(f) < 3) {
			require.Equal(t, len(lines)-1, i, "round %d: a malformed line that is not the last: %q", round, l)
			return
		}
		key := f[1]
		switch f[0] {
		case "add":
			g, err := strconv.Atoi(f[2])
			if err != nil {
				require.Equal(t, len(lines)-1, i, "round %d: %q", round, l)
				return
			}
			_, present := last[key]
			require.False(t, present, "round %d: add of %s, present already (line %d)", round, key, i)
			if prev, ok := gone[key]; ok {
				require.Greater(t, g, prev, "round %d: %s came back older than it was deleted at (line %d)", round, key, i)
			}
			last[key] = g
		case "update":
			g, err := strconv.Atoi(f[2])
			if err != nil {
				require.Equal(t, len(lines)-1, i, "round %d: %q", round, l)
				return
			}
			prev, present := last[key]
			require.True(t, present, "round %d: update of %s, not present (line %d)", round, key, i)
			require.Greater(t, g, prev, "round %d: %s went back from %d to %d (line %d)", round, key, prev, g, i)
			last[key] = g
		case "delete":
			_, present := last[key]
			require.True(t, present, "round %d: delete of %s, not present (line %d)", round, key, i)
			gone[key] = last[key]
			delete(last, key)
		default:
			require.Equal(t, len(lines)-1, i, "round %d: %q", round, l)
		}
	}
}
