package debughttp

import (
	"fmt"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// healthOnly is an informer as view reads it, in the state of its Health.
type healthOnly informer.Health

func (h healthOnly) Health() informer.Health               { return informer.Health(h) }
func (healthOnly) Types() string                           { return "string → *x" }
func (healthOnly) IndexStats() []informer.IndexStat        { return nil }
func (healthOnly) StuckHandlerThreshold() time.Duration    { return 0 }
func (healthOnly) ObjectJSON(string) ([]byte, bool, error) { return nil, false, nil }
func (healthOnly) FormattedKeys() iter.Seq[string]         { return func(func(string) bool) {} }

// The badge of a synced informer says how stale its cache may be once its
// source has failed for longer than its liveness bound (at once without
// one), at a fixed clock.
func TestStaleBadge(t *testing.T) {
	now := time.Date(2026, 11, 28, 17, 0, 0, 0, time.UTC)
	down := fmt.Errorf("dial tcp: connection refused: %w", informer.ErrTransient)
	const bound = 5 * time.Second // the etcd source's default
	failing := func(since, answered time.Duration) informer.Health {
		return informer.Health{
			Name: "x", Running: true, Synced: true, LivenessBound: bound,
			LastListAt: now.Add(-time.Hour), LastEventAt: now.Add(-answered),
			LastError: down, LastErrorAt: now.Add(-time.Second), FailingSince: now.Add(-since),
		}
	}
	bounded := func(h informer.Health, b time.Duration) informer.Health { h.LivenessBound = b; return h }
	for _, tc := range []struct {
		name   string
		health informer.Health
		badge  string  // "": "synced"
		stale  float64 // StaleSeconds
	}{
		{"answering", informer.Health{Name: "x", Running: true, Synced: true, LastListAt: now.Add(-time.Hour)}, "", 0},
		{"a blip", failing(bound, bound+time.Second), "", 0},
		{"a blip, no bound", bounded(failing(2*time.Second, 3*time.Second), 0), "synced · source down 2s, stale up to 3s", 3},
		{"down past a long bound", bounded(failing(50*time.Second, 52*time.Second), 45*time.Second), "synced · source down 50s, stale up to 52s", 52},
		{"down within a long bound", bounded(failing(40*time.Second, 52*time.Second), 45*time.Second), "", 0},
		{"down 50 s", failing(50*time.Second, 52*time.Second), "synced · source down 50s, stale up to 52s", 52},
		{"down, quiet before", failing(50*time.Second, 2*time.Hour), "synced · source down 50s, stale up to 1h0m0s", 3600},
		{"down, the last answer a list", func() informer.Health {
			h := failing(90*time.Second, 0)
			h.LastEventAt = time.Time{}
			h.LastListAt = now.Add(-2 * time.Minute)
			return h
		}(), "synced · source down 1m30s, stale up to 2m0s", 120},
		{"not synced", func() informer.Health { h := failing(time.Minute, time.Minute); h.Synced = false; return h }(), "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := view(healthOnly(tc.health), now)
			assert.Equal(t, tc.badge, v.StaleBadge())
			assert.Equal(t, tc.stale, v.StaleSeconds)
			assert.Equal(t, tc.health.LivenessBound.Seconds(), v.LivenessBoundSeconds)
			if tc.health.FailingSince.IsZero() {
				assert.Nil(t, v.FailingSince)
			} else {
				require.NotNil(t, v.FailingSince)
				assert.Equal(t, tc.health.FailingSince, *v.FailingSince)
			}

			var b strings.Builder
			require.NoError(t, overviewTemplate.Execute(&b, overview{Page: pageView{Time: now, Informers: []informerView{v}}}))
			page := b.String()
			if tc.health.LivenessBound > 0 {
				assert.Contains(t, page, "<dt>liveness bound</dt><dd>"+short(tc.health.LivenessBound)+"</dd>")
			} else {
				assert.Contains(t, page, `<dt>liveness bound</dt><dd><span class="none">none</span></dd>`)
			}
			switch {
			case tc.badge != "":
				assert.Contains(t, page, `<span class="badge warning flag-stale">`+tc.badge+`</span>`)
				assert.NotContains(t, page, `<span class="badge ok">synced</span>`)
			case tc.health.Synced:
				assert.Contains(t, page, `<span class="badge ok">synced</span>`)
				assert.NotContains(t, page, "flag-stale")
			default:
				assert.NotContains(t, page, "flag-stale")
			}
		})
	}
}
