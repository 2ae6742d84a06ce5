package sourcetest_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ginformer/ginformer/source/sourcetest"
)

// recorder is a testing.TB that records a check's failures instead of
// failing the test, so a test can assert which checks a source fails and
// why. FailNow and SkipNow end the check's goroutine, as in a real test.
// Methods not overridden (Name, TempDir, ...) go to the real test.
type recorder struct {
	testing.TB
	ctx context.Context

	mu       sync.Mutex // guards the fields below
	failed   bool
	skipped  bool
	logs     []string
	cleanups []func()
}

func (r *recorder) Helper()                  {}
func (r *recorder) Context() context.Context { return r.ctx }

func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	r.cleanups = append(r.cleanups, f)
	r.mu.Unlock()
}

func (r *recorder) Log(args ...any) {
	r.mu.Lock()
	r.logs = append(r.logs, strings.TrimSuffix(fmt.Sprintln(args...), "\n"))
	r.mu.Unlock()
}

func (r *recorder) Logf(format string, args ...any) { r.Log(fmt.Sprintf(format, args...)) }

func (r *recorder) Fail() {
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *recorder) FailNow()                          { r.Fail(); runtime.Goexit() }
func (r *recorder) Error(args ...any)                 { r.Log(args...); r.Fail() }
func (r *recorder) Errorf(format string, args ...any) { r.Logf(format, args...); r.Fail() }
func (r *recorder) Fatal(args ...any)                 { r.Log(args...); r.FailNow() }
func (r *recorder) Fatalf(format string, args ...any) { r.Logf(format, args...); r.FailNow() }

func (r *recorder) SkipNow() {
	r.mu.Lock()
	r.skipped = true
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Skip(args ...any)                 { r.Log(args...); r.SkipNow() }
func (r *recorder) Skipf(format string, args ...any) { r.Logf(format, args...); r.SkipNow() }

func (r *recorder) Skipped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped
}

// output returns what the check logged.
func (r *recorder) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.logs, "\n")
}

// runRecorded runs the named check against h on its own goroutine with a
// recorder, then the check's cleanups, and returns the recorder.
func runRecorded[T any](t *testing.T, h sourcetest.Harness[T], check string) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	r := &recorder{TB: t, ctx: ctx}
	done := make(chan bool)
	go func() {
		found := false
		defer func() {
			if p := recover(); p != nil {
				r.Errorf("the check panicked: %v\n%s", p, debug.Stack())
			}
			done <- found
		}()
		found = sourcetest.RunCheck(r, h, check)
	}()
	if !<-done && !r.Failed() && !r.Skipped() {
		t.Fatalf("no check named %q", check)
	}
	cancel()
	r.mu.Lock()
	cleanups := slices.Clone(r.cleanups)
	r.mu.Unlock()
	for _, f := range slices.Backward(cleanups) {
		f()
	}
	return r
}
