package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"

	"github.com/ginformer/ginformer/informer"
)

// What a child measures of itself: CPU, memory, the requests its etcd
// client sends, the informer's events and the informer's own log lines
// (restore and snapshot timings).

// cpuNS is the process's user+system CPU time since it started.
func cpuNS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// vmHWM is the process's peak resident set size (Linux), 0 if unknown.
func vmHWM() int64 {
	b, err := os.ReadFile(filepath.Join("/proc", "self", "status"))
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// rpcCounter counts the requests a client sends, by gRPC method, and the
// range reads of the prefix among them: Range requests with a range end
// starting in the prefix, and RangeStream calls.
type rpcCounter struct {
	prefix       string
	prefixRanges atomic.Int64
	mu           sync.Mutex
	unary        map[string]int64 // method's last element → calls
	streams      map[string]int64
}

func newRPCCounter(prefix string) *rpcCounter {
	return &rpcCounter{prefix: prefix, unary: map[string]int64{}, streams: map[string]int64{}}
}

// dialOptions returns the interceptors to give the client; the source
// dials its own connections with the client's dial options, so they count
// its reads and watches too.
func (c *rpcCounter) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if r, ok := req.(*pb.RangeRequest); ok && len(r.RangeEnd) > 0 && strings.HasPrefix(string(r.Key), c.prefix) {
				c.prefixRanges.Add(1)
			}
			c.count(c.unary, method)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			if strings.HasSuffix(method, "/RangeStream") {
				c.prefixRanges.Add(1) // the source streams nothing but its prefix
			}
			c.count(c.streams, method)
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
}

func (c *rpcCounter) count(m map[string]int64, method string) {
	c.mu.Lock()
	m[method[strings.LastIndexByte(method, '/')+1:]]++
	c.mu.Unlock()
}

// snapshot returns the counts so far.
func (c *rpcCounter) snapshot() rpcCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := rpcCounts{PrefixRanges: c.prefixRanges.Load(), Unary: map[string]int64{}, Streams: map[string]int64{}}
	for k, v := range c.unary {
		r.Unary[k] = v
	}
	for k, v := range c.streams {
		r.Streams[k] = v
	}
	return r
}

// rpcCounts is what an rpcCounter counted.
type rpcCounts struct {
	PrefixRanges int64            `json:"prefixRanges"`
	Unary        map[string]int64 `json:"unary"`
	Streams      map[string]int64 `json:"streams"`
}

// eventMetrics is an informer.Metrics counting watch events by type,
// relists and expired versions.
type eventMetrics struct {
	informer.NoopMetrics
	added, modified, deleted, bookmarks, relists, expired atomic.Int64
}

func (m *eventMetrics) EventReceived(_ string, t informer.EventType) {
	switch t {
	case informer.EventAdded:
		m.added.Add(1)
	case informer.EventModified:
		m.modified.Add(1)
	case informer.EventDeleted:
		m.deleted.Add(1)
	case informer.EventBookmark:
		m.bookmarks.Add(1)
	}
}

func (m *eventMetrics) Relisted(string) { m.relists.Add(1) }

func (m *eventMetrics) Error(_ string, class informer.ErrorClass) {
	if class == informer.ErrorClassExpired {
		m.expired.Add(1)
	}
}

// logLine is one line the informer or the source logged.
type logLine struct {
	Time  time.Time      `json:"time"`
	Level int            `json:"level"`
	Msg   string         `json:"msg"`
	Attrs map[string]any `json:"attrs,omitempty"`
}

// logBook is a slog.Handler that keeps every line at V(2) (slog level -2)
// and above, and prints errors on stderr: the informer reports the
// durations of its restores and snapshot writes at V(1) and V(2).
type logBook struct {
	mu    *sync.Mutex
	lines *[]logLine
	attrs []slog.Attr
}

func newLogBook() logBook { return logBook{mu: &sync.Mutex{}, lines: &[]logLine{}} }

func (b logBook) Enabled(_ context.Context, l slog.Level) bool { return l >= -2 }

func (b logBook) Handle(_ context.Context, r slog.Record) error {
	l := logLine{Time: r.Time, Level: int(r.Level), Msg: r.Message, Attrs: map[string]any{}}
	add := func(a slog.Attr) bool {
		v := a.Value.Resolve()
		if v.Kind() == slog.KindDuration {
			l.Attrs[a.Key] = v.Duration() // JSON: nanoseconds
		} else {
			l.Attrs[a.Key] = fmt.Sprint(v.Any())
		}
		return true
	}
	for _, a := range b.attrs {
		add(a)
	}
	r.Attrs(add)
	if r.Level >= slog.LevelError {
		fmt.Fprintf(os.Stderr, "child log: %s %v\n", r.Message, l.Attrs)
	}
	b.mu.Lock()
	*b.lines = append(*b.lines, l)
	b.mu.Unlock()
	return nil
}

func (b logBook) WithAttrs(as []slog.Attr) slog.Handler {
	b.attrs = append(b.attrs[:len(b.attrs):len(b.attrs)], as...)
	return b
}

func (b logBook) WithGroup(string) slog.Handler { return b }

// find returns the lines whose message starts with msg.
func (b logBook) find(msg string) []logLine {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []logLine
	for _, l := range *b.lines {
		if strings.HasPrefix(l.Msg, msg) {
			out = append(out, l)
		}
	}
	return out
}

// duration returns the attribute key of l as a duration, 0 if absent.
func (l logLine) duration(key string) time.Duration {
	d, _ := l.Attrs[key].(time.Duration)
	return d
}
