package debughttp

import (
	"errors"
	"fmt"
	"time"

	"github.com/ginformer/ginformer/informer"
)

// pageView is the JSON document of ?format=json (its schema is in the
// package doc, which must change with it: schema_test.go): every informer
// of the [Source], in its order.
type pageView struct {
	// Time is when the snapshot was taken.
	Time      time.Time      `json:"time"`
	Informers []informerView `json:"informers"`
}

// informerView is one informer in a [pageView]; see [informer.Health] for the
// meaning of each field. Times are omitted for what has not happened yet.
type informerView struct {
	Name           string     `json:"name"`
	Types          string     `json:"types"`
	Running        bool       `json:"running"`
	Synced         bool       `json:"synced"`
	AppliedVersion string     `json:"appliedVersion,omitempty"`
	AppliedAt      *time.Time `json:"appliedAt,omitempty"`
	LastListAt     *time.Time `json:"lastListAt,omitempty"`
	LastEventAt    *time.Time `json:"lastEventAt,omitempty"`
	LastError      string     `json:"lastError,omitempty"`
	LastErrorAt    *time.Time `json:"lastErrorAt,omitempty"`
	// FailingSince is when the source's current outage began (see
	// [informer.Health]); omitted while the source answers. StaleSeconds
	// is how stale the cache may be, in seconds since the source last
	// answered (a list, or a watch event other than an error): set only
	// for a synced informer whose source has failed for longer than its
	// liveness bound, LivenessBoundSeconds (omitted when the source
	// declares none: then as soon as it fails); see
	// [informer.Health.StaleFor].
	FailingSince         *time.Time `json:"failingSince,omitempty"`
	StaleSeconds         float64    `json:"staleSeconds,omitempty"`
	LivenessBoundSeconds float64    `json:"livenessBoundSeconds,omitempty"`
	// Lists counts the complete lists applied since Run started (the
	// first included), WatchRestarts the watches re-opened without a
	// relist, Errors the errors survived by class (only classes seen).
	Lists         int64                         `json:"lists"`
	WatchRestarts int64                         `json:"watchRestarts"`
	Errors        map[informer.ErrorClass]int64 `json:"errors,omitempty"`
	QueueDepth    int                           `json:"queueDepth"`
	Objects       int                           `json:"objects"`
	// Restored is true while the cache holds a restored snapshot and has
	// not caught up with the source; RestoredVersion and RestoredAt stay
	// set after the catch-up. Snapshot* describe the last snapshot written.
	Restored        bool       `json:"restored"`
	RestoredVersion string     `json:"restoredVersion,omitempty"`
	RestoredAt      *time.Time `json:"restoredAt,omitempty"`
	SnapshotVersion string     `json:"snapshotVersion,omitempty"`
	SnapshotAt      *time.Time `json:"snapshotAt,omitempty"`
	SnapshotBytes   int64      `json:"snapshotBytes,omitempty"`
	// Start is how the last start used the snapshot ([informer.StartOutcome]'s
	// name: cold, refused, verifying, catching-up, resumed, relisted),
	// StartReason why for refused and relisted; empty without snapshots.
	Start       string `json:"start,omitempty"`
	StartReason string `json:"startReason,omitempty"`
	// StuckThresholdSeconds is the informer's StuckHandlerThreshold; 0:
	// stuck calls are not reported.
	StuckThresholdSeconds float64              `json:"stuckThresholdSeconds"`
	Indexes               []informer.IndexStat `json:"indexes"`
	Handlers              []handlerView        `json:"handlers"`
	// LongestCall names the handler whose call in progress has run
	// longest; empty when no handler is in a call.
	LongestCall string `json:"longestCall,omitempty"`
	// Problems lists what an operator should look at, most severe first;
	// empty when the informer looks healthy (see [problem]).
	Problems []problem `json:"problems"`

	// staleBadge is what the HTML badge says instead of "synced" when
	// StaleSeconds is set.
	staleBadge string
}

// StaleBadge is what the HTML page's badge says of a synced informer
// whose source has failed for longer than its liveness bound (see
// [staleness]): for how long, and how stale the cache may be. ""
// otherwise: the badge says "synced".
func (v informerView) StaleBadge() string { return v.staleBadge }

// handlerView is one handler in an [informerView].
type handlerView struct {
	Name     string `json:"name"`
	Coalesce bool   `json:"coalesce"`
	Synced   bool   `json:"synced"`
	Backlog  int    `json:"backlog"`
	// RunningSeconds is how long the call in progress has run; 0 when idle.
	RunningSeconds float64 `json:"runningSeconds"`
	RunningKey     string  `json:"runningKey,omitempty"`
	// Stuck is true when the call in progress has run past the
	// informer's stuck threshold.
	Stuck      bool  `json:"stuck"`
	StuckCalls int64 `json:"stuckCalls"`
}

// problem is something about an informer an operator should look at. The
// JSON has its Level and Text; the package doc says which states are
// problems at which level (problems implements it). A stuck handler's
// report is not repeated as an error while its call goes on.
type problem struct {
	Level string `json:"level"` // "error" or "warning"
	Text  string `json:"text"`
	// brief is Text without the informer's last error in it; "" when
	// Text does not quote that error.
	brief string
}

// Brief is the problem as the HTML page shows it: Text without the
// informer's last error, which the page shows once per card, as "last
// error".
func (p problem) Brief() string {
	if p.brief != "" {
		return p.brief
	}
	return p.Text
}

// The levels of a [problem].
const (
	levelError   = "error"
	levelWarning = "warning"
)

// recentError is how long after an error the page flags it.
const recentError = 5 * time.Minute

func (h *handler) snapshot() pageView {
	infs := h.src.Inspectors()
	page := pageView{Time: time.Now(), Informers: make([]informerView, 0, len(infs))}
	for _, inf := range infs {
		page.Informers = append(page.Informers, view(inf, page.Time))
	}
	return page
}

// view reads one informer.
func view(inf informer.Inspector, now time.Time) informerView {
	hl := inf.Health()
	threshold := inf.StuckHandlerThreshold()
	v := informerView{
		Name: hl.Name, Types: inf.Types(), Running: hl.Running, Synced: hl.Synced,
		AppliedVersion: hl.AppliedVersion, AppliedAt: timeOrNil(hl.AppliedAt),
		LastListAt: timeOrNil(hl.LastListAt), LastEventAt: timeOrNil(hl.LastEventAt),
		LastErrorAt: timeOrNil(hl.LastErrorAt), FailingSince: timeOrNil(hl.FailingSince),
		LivenessBoundSeconds: hl.LivenessBound.Seconds(),
		Lists:                hl.Lists, WatchRestarts: hl.WatchRestarts, Errors: hl.Errors,
		QueueDepth: hl.QueueDepth, Objects: hl.Objects,
		Restored: hl.Restored, RestoredVersion: hl.RestoredVersion, RestoredAt: timeOrNil(hl.RestoredAt),
		SnapshotVersion: hl.SnapshotVersion, SnapshotAt: timeOrNil(hl.SnapshotAt), SnapshotBytes: hl.SnapshotBytes,
		StartReason:           hl.StartReason,
		StuckThresholdSeconds: threshold.Seconds(),
		Indexes:               inf.IndexStats(),
		Handlers:              make([]handlerView, 0, len(hl.Handlers)),
	}
	if hl.Start != informer.StartNone {
		v.Start = hl.Start.String()
	}
	if hl.LastError != nil {
		v.LastError = hl.LastError.Error()
	}
	if v.Indexes == nil {
		v.Indexes = []informer.IndexStat{}
	}
	for _, hh := range hl.Handlers {
		v.Handlers = append(v.Handlers, handlerView{
			Name: hh.Name, Coalesce: hh.Coalesce, Synced: hh.Synced, Backlog: hh.Backlog,
			RunningSeconds: hh.Running.Seconds(), RunningKey: hh.RunningKey,
			Stuck:      threshold > 0 && hh.Running >= threshold,
			StuckCalls: hh.StuckCalls,
		})
	}
	if longest, ok := hl.LongestCall(); ok {
		v.LongestCall = longest.Name
	}
	v.Problems = problems(hl, v.Handlers, threshold, now)
	if down, stale, ok := staleness(hl, now); ok {
		v.StaleSeconds = stale.Seconds()
		v.staleBadge = "synced · source down " + short(down) + ", stale up to " + short(stale)
	}
	return v
}

// staleness says, for a synced informer whose source has failed for longer
// than the source's liveness bound ([informer.Health.StaleFor]), for how
// long it has failed (down) and how stale the cache may be: the time since
// the source last answered (a list, or an event other than an error),
// which is at least down. The bound is the grace: within it, a watch that
// looks alive may lag as much unnoticed, and the reflector's first retries
// end most blips, so the badge keeps "synced". A source that declares no
// bound gets none: the badge turns as soon as it fails, since nothing says
// a failure of that source is routine.
func staleness(hl informer.Health, now time.Time) (down, stale time.Duration, ok bool) {
	if !hl.Synced {
		return 0, 0, false
	}
	stale, ok = hl.StaleFor(now)
	if !ok {
		return 0, 0, false
	}
	return now.Sub(hl.FailingSince), stale, true
}

// problems judges an informer, errors first (see [problem]).
func problems(hl informer.Health, handlers []handlerView, threshold time.Duration, now time.Time) []problem {
	var errs, warns []problem
	push := func(p problem) {
		if p.Level == levelError {
			errs = append(errs, p)
		} else {
			warns = append(warns, p)
		}
	}
	add := func(level, format string, args ...any) {
		push(problem{Level: level, Text: fmt.Sprintf(format, args...)})
	}
	// withError adds a problem that quotes the last error: the page shows
	// it without (brief), the error being on the card once already.
	withError := func(level, brief string) {
		push(problem{Level: level, Text: brief + ": " + hl.LastError.Error(), brief: brief})
	}
	failing := sourceFailing(hl)
	errorTold := false // the last error is in a problem already
	if !hl.Running {
		add(levelError, "not running")
	}
	switch {
	case hl.Synced:
	case hl.Start == informer.StartVerifying:
		add(levelWarning, "serving a snapshot restored %s, unconfirmed: the source has not answered since the start, so neither its identity nor the changes made meanwhile are known",
			ago(timeOrNil(hl.RestoredAt), now))
	case hl.Restored:
		add(levelWarning, "serving a snapshot restored %s: not synced until it catches up with the source",
			ago(timeOrNil(hl.RestoredAt), now))
	case failing:
		withError(levelError, fmt.Sprintf("not synced: the source's latest answer, %s, was an error", ago(&hl.LastErrorAt, now)))
		errorTold = true
	case hl.LastListAt.IsZero():
		add(levelError, "not synced: waiting for the source's first list")
	default:
		add(levelError, "not synced: applying the first list (%d keys queued)", hl.QueueDepth)
	}
	stuckNow := false
	for _, h := range handlers {
		switch {
		case h.Stuck:
			stuckNow = true
			add(levelError, "handler %s is stuck: its call on key %s has run %s (threshold %s)",
				h.Name, h.RunningKey, secs(h.RunningSeconds), threshold)
		case h.StuckCalls > 0:
			add(levelWarning, "handler %s: %d calls ran past the stuck threshold (%s)", h.Name, h.StuckCalls, threshold)
		}
		if hl.Synced && !h.Synced {
			add(levelWarning, "handler %s has not synced: %d notifications behind", h.Name, h.Backlog)
		}
	}
	switch {
	case errorTold || hl.LastError == nil || now.Sub(hl.LastErrorAt) >= recentError:
	case stuckNow && errors.Is(hl.LastError, informer.ErrHandlerStuck): // told above
	case failing:
		withError(levelError, fmt.Sprintf("the source's latest answer, %s, was an error", ago(&hl.LastErrorAt, now)))
	default:
		withError(levelWarning, "error "+ago(&hl.LastErrorAt, now))
	}
	return append(append(make([]problem, 0, len(errs)+len(warns)), errs...), warns...)
}

// sourceFailing reports whether the source's latest answer was an error:
// the last error is newer than the last list and event, and is none of the
// errors the informer meets on its own side (handlers, key, index and
// transform functions, snapshots, the mutation detector) nor an object the
// source skipped.
func sourceFailing(hl informer.Health) bool {
	if hl.LastError == nil || !hl.LastErrorAt.After(hl.LastListAt) || !hl.LastErrorAt.After(hl.LastEventAt) {
		return false
	}
	for _, own := range []error{
		informer.ErrHandlerStuck, informer.ErrHandlerPanic, informer.ErrKeyFunc, informer.ErrIndexFunc,
		informer.ErrTransform, informer.ErrSnapshot, informer.ErrCacheMutated, informer.ErrDecode,
	} {
		if errors.Is(hl.LastError, own) {
			return false
		}
	}
	return true
}

// Level returns the most severe level of the informer's problems: "error",
// "warning" or "ok". The HTML page colours the informer's card with it.
func (v informerView) Level() string {
	level := "ok"
	for _, p := range v.Problems {
		if p.Level == levelError {
			return levelError
		}
		level = levelWarning
	}
	return level
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// ago formats how long before now t was, to a precision that suits it.
func ago(t *time.Time, now time.Time) string {
	if t == nil {
		return "never"
	}
	return short(now.Sub(*t)) + " ago"
}

// secs formats a call's running time.
func secs(s float64) string {
	if s == 0 {
		return "idle"
	}
	return short(time.Duration(s * float64(time.Second)))
}

// short rounds d for a person: milliseconds under a second, tenths under
// a minute, seconds above.
func short(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// bytes formats a size in KiB, MiB or GiB.
func bytes(n int64) string {
	const k = 1024
	switch {
	case n < k:
		return fmt.Sprintf("%d B", n)
	case n < k*k:
		return fmt.Sprintf("%.1f KiB", float64(n)/k)
	case n < k*k*k:
		return fmt.Sprintf("%.1f MiB", float64(n)/(k*k))
	default:
		return fmt.Sprintf("%.1f GiB", float64(n)/(k*k*k))
	}
}
