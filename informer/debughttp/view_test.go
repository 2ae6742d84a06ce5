package debughttp_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/informer/debughttp"
)

// Which states are problems, at which level, and in which order.
func TestProblems(t *testing.T) {
	now := time.Now()
	listed := now.Add(-time.Hour)
	healthy := informer.Health{Running: true, Synced: true, LastListAt: listed}
	with := func(change func(*informer.Health)) informer.Health {
		h := healthy
		change(&h)
		return h
	}
	handler := func(hh informer.HandlerHealth) func(*informer.Health) {
		return func(h *informer.Health) { h.Handlers = []informer.HandlerHealth{hh} }
	}
	sourceErr := errors.New("connection refused")
	stuckErr := fmt.Errorf("handler %q has been running for 1m: %w", "h", informer.ErrHandlerStuck)
	decodeErr := fmt.Errorf("key a: %w", informer.ErrDecode)
	for _, tc := range []struct {
		name      string
		health    informer.Health
		threshold time.Duration
		want      []string // level: text
	}{
		{"healthy", healthy, 30 * time.Second, nil},
		{"not running", with(func(h *informer.Health) { h.Running, h.Synced = false, false; h.LastListAt = time.Time{} }), 0,
			[]string{"error: not running", "error: not synced: waiting for the source's first list"}},
		{"applying the first list", with(func(h *informer.Health) { h.Synced, h.QueueDepth = false, 7 }), 0,
			[]string{"error: not synced: applying the first list (7 keys queued)"}},
		{"source failing", with(func(h *informer.Health) {
			h.Synced, h.LastListAt = false, time.Time{}
			h.LastError, h.LastErrorAt = sourceErr, now.Add(-10*time.Minute)
		}), 0, []string{"error: not synced: the source's latest answer, 10m0s ago, was an error: connection refused"}},
		{"restored", with(func(h *informer.Health) {
			h.Synced, h.Restored, h.RestoredVersion, h.RestoredAt = false, true, "42", now.Add(-2*time.Second)
		}), 0, []string{"warning: serving a snapshot restored 2s ago: not synced until it catches up with the source"}},
		{"synced, the source failing now", with(func(h *informer.Health) { h.LastError, h.LastErrorAt = sourceErr, now.Add(-time.Minute) }), 0,
			[]string{"error: the source's latest answer, 1m0s ago, was an error: connection refused"}},
		{"an error the source answered since", with(func(h *informer.Health) {
			h.LastError, h.LastErrorAt, h.LastEventAt = sourceErr, now.Add(-time.Minute), now.Add(-time.Second)
		}), 0, []string{"warning: error 1m0s ago: connection refused"}},
		{"a skipped object", with(func(h *informer.Health) { h.LastError, h.LastErrorAt = decodeErr, now.Add(-time.Minute) }), 0,
			[]string{"warning: error 1m0s ago: key a: informer: cannot decode object"}},
		{"an old error", with(func(h *informer.Health) { h.LastError, h.LastErrorAt = sourceErr, now.Add(-time.Hour+time.Second) }), 0, nil},
		{"stuck handler", with(func(h *informer.Health) {
			h.Handlers = []informer.HandlerHealth{{Name: "h", Synced: true, Running: time.Minute, RunningKey: "ns/a", StuckCalls: 1}}
			h.LastError, h.LastErrorAt = stuckErr, now.Add(-30*time.Second)
		}), 30 * time.Second, []string{"error: handler h is stuck: its call on key ns/a has run 1m0s (threshold 30s)"}},
		{"stuck before", with(func(h *informer.Health) {
			h.Handlers = []informer.HandlerHealth{{Name: "h", Synced: true, StuckCalls: 3}}
			h.LastError, h.LastErrorAt = stuckErr, now.Add(-30*time.Second)
		}), 30 * time.Second, []string{
			"warning: handler h: 3 calls ran past the stuck threshold (30s)",
			"warning: error 30s ago: handler \"h\" has been running for 1m: informer: handler call stuck",
		}},
		{"long call, no threshold", with(handler(informer.HandlerHealth{Name: "h", Synced: true, Running: time.Hour})), 0, nil},
		{"handler behind", with(handler(informer.HandlerHealth{Name: "h", Backlog: 12})), 0,
			[]string{"warning: handler h has not synced: 12 notifications behind"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.health.Name = "x"
			srv := serveFakes(t, &fakeInspector{health: tc.health, threshold: tc.threshold})
			_, _, body := get(t, srv.URL+"?format=json")
			var page debughttp.Page
			require.NoError(t, json.Unmarshal([]byte(body), &page))
			require.Len(t, page.Informers, 1)
			// How long ago depends on when the page was read: not compared.
			var got, want []string
			for _, p := range page.Informers[0].Problems {
				got = append(got, ago.ReplaceAllString(p.Level+": "+p.Text, "T ago"))
			}
			for _, w := range tc.want {
				want = append(want, ago.ReplaceAllString(w, "T ago"))
			}
			assert.Equal(t, want, got)
			level := "ok"
			if len(tc.want) > 0 {
				level = map[byte]string{'e': "error", 'w': "warning"}[tc.want[0][0]]
			}
			assert.Equal(t, level, page.Informers[0].Level())

			_, _, doc := get(t, srv.URL)
			parseHTML(t, doc)
			if tc.health.LastError != nil {
				// Once, as "last error": not again in the problems,
				// at the top or on the card.
				assert.Equal(t, 1, strings.Count(doc, html.EscapeString(tc.health.LastError.Error())), "the last error on the doc")
			}
			assert.Contains(t, doc, `<section class="card `+level+`"`)
			if level == "ok" {
				assert.Contains(t, doc, `<p class="allok" id="attention">`)
			} else {
				assert.Contains(t, doc, `<section class="summary" id="attention">`)
			}
		})
	}
}

var ago = regexp.MustCompile(`[0-9][0-9.hmµs]* ago`)

func TestRefreshAndMetricsLink(t *testing.T) {
	f := &fakeInspector{health: informer.Health{Name: "x", Running: true, Synced: true}, keys: []string{"a"}}
	srv := httptest.NewServer(debughttp.Handler(debughttp.Informers{f}, debughttp.WithMetricsLink("/metrics")))
	t.Cleanup(srv.Close)

	_, _, body := get(t, srv.URL)
	assert.NotContains(t, body, "http-equiv")
	assert.Contains(t, body, `<a href="/metrics" id="metrics-link">metrics</a>`)
	assert.Contains(t, body, `auto-refresh: <b>off</b> <a href="?refresh=5" class="refresh-link">5 s</a>`)

	_, _, body = get(t, srv.URL+"?refresh=5")
	assert.Contains(t, body, `<meta http-equiv="refresh" content="5"/>`)
	assert.Contains(t, body, `auto-refresh: <a href="?" class="refresh-link">off</a> <b>5 s</b>`)

	_, _, body = get(t, srv.URL+"?informer=x&q=a&refresh=30")
	assert.Contains(t, body, `<meta http-equiv="refresh" content="30"/>`)
	assert.Contains(t, body, `<a href="?informer=x&amp;q=a" class="refresh-link">off</a>`)

	for _, bad := range []string{"0", "-1", "3601", "x"} {
		_, _, body = get(t, srv.URL+"?refresh="+bad)
		assert.NotContains(t, body, "http-equiv", bad)
	}
}

func TestHead(t *testing.T) {
	srv := serveFakes(t, &fakeInspector{health: informer.Health{Name: "x"}})
	for _, query := range []string{"", "?format=json", "?informer=x"} {
		resp, err := http.Head(srv.URL + query)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, query)
	}
}
