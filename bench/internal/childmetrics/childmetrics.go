// Package childmetrics is what a benchmark's child process measures of
// itself: its CPU time and peak memory, the informer's events by type
// ([EventMetrics]) and the informer's own log lines ([LogBook]), where it
// reports the durations of its restores and snapshot writes.
package childmetrics

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

	"github.com/ginformer/ginformer/informer"
)

// CPUNS is the process's user+system CPU time since it started
// (getrusage), in nanoseconds; 0 if unknown.
func CPUNS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// VmHWM is the process's peak resident set size in bytes (Linux), 0 if
// unknown.
func VmHWM() int64 {
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

// RunDelayNS is the time the process's threads have spent runnable but
// waiting for a CPU (Linux schedstat's run_delay, summed over the threads
// alive), in nanoseconds; 0 if unknown. On a shared machine it is the part
// of the wall time lost to other processes (and to the process's own
// threads beyond the cores).
func RunDelayNS() int64 {
	dir := filepath.Join("/proc", "self", "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			d, _ := strconv.ParseInt(f[1], 10, 64)
			sum += d
		}
	}
	return sum
}

// EventMetrics is an [informer.Metrics] that counts watch events by type
// (a streaming list's initial events are not watch events), relists and
// expired versions, and records when the first bookmark arrived and the
// first list was applied. Its zero value is ready; it is safe for
// concurrent use.
type EventMetrics struct {
	informer.NoopMetrics
	Added, Modified, Deleted, Bookmarks, Relists, Expired atomic.Int64
	// FirstBookmarkNS is when the first bookmark was received (Unix ns),
	// 0 before; LastObjectEventNS when the last other event was;
	// FirstRelistNS when the first list was applied.
	FirstBookmarkNS, LastObjectEventNS, FirstRelistNS atomic.Int64
}

// EventReceived implements [informer.Metrics].
func (m *EventMetrics) EventReceived(_ string, t informer.EventType) {
	switch t {
	case informer.EventAdded:
		m.Added.Add(1)
	case informer.EventModified:
		m.Modified.Add(1)
	case informer.EventDeleted:
		m.Deleted.Add(1)
	case informer.EventBookmark:
		m.Bookmarks.Add(1)
		m.FirstBookmarkNS.CompareAndSwap(0, time.Now().UnixNano())
		return
	}
	m.LastObjectEventNS.Store(time.Now().UnixNano())
}

// Relisted implements [informer.Metrics].
func (m *EventMetrics) Relisted(string) {
	m.Relists.Add(1)
	m.FirstRelistNS.CompareAndSwap(0, time.Now().UnixNano())
}

// Error implements [informer.Metrics]: it counts the expired class.
func (m *EventMetrics) Error(_ string, class informer.ErrorClass) {
	if class == informer.ErrorClassExpired {
		m.Expired.Add(1)
	}
}

// LogLine is one line the informer or the source logged.
type LogLine struct {
	Time  time.Time      `json:"time"`
	Level int            `json:"level"`
	Msg   string         `json:"msg"`
	Attrs map[string]any `json:"attrs,omitempty"`
}

// LogBook is a slog.Handler that keeps every line at V(2) (slog level -2)
// and above, and prints errors on stderr: the informer reports the
// durations of its restores and snapshot writes at V(1) and V(2). Use
// [NewLogBook]; copies share the lines.
type LogBook struct {
	mu    *sync.Mutex
	lines *[]LogLine
	attrs []slog.Attr
}

// NewLogBook returns an empty LogBook.
func NewLogBook() LogBook { return LogBook{mu: &sync.Mutex{}, lines: &[]LogLine{}} }

// Enabled implements slog.Handler.
func (b LogBook) Enabled(_ context.Context, l slog.Level) bool { return l >= -2 }

// Handle implements slog.Handler.
func (b LogBook) Handle(_ context.Context, r slog.Record) error {
	l := LogLine{Time: r.Time, Level: int(r.Level), Msg: r.Message, Attrs: map[string]any{}}
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

// WithAttrs implements slog.Handler.
func (b LogBook) WithAttrs(as []slog.Attr) slog.Handler {
	b.attrs = append(b.attrs[:len(b.attrs):len(b.attrs)], as...)
	return b
}

// WithGroup implements slog.Handler (groups are ignored).
func (b LogBook) WithGroup(string) slog.Handler { return b }

// Find returns the lines whose message starts with msg, in order.
func (b LogBook) Find(msg string) []LogLine {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []LogLine
	for _, l := range *b.lines {
		if strings.HasPrefix(l.Msg, msg) {
			out = append(out, l)
		}
	}
	return out
}

// Duration returns the attribute key of l as a duration, 0 if absent.
func (l LogLine) Duration(key string) time.Duration {
	d, _ := l.Attrs[key].(time.Duration)
	return d
}
