package debughttp_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/informer/debughttp"
	"github.com/ginformer/ginformer/source/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type endpoint struct {
	Name   string `json:"name"`
	Region string `json:"region"`
}

func endpointKey(e *endpoint) (string, error) { return e.Name, nil }

type pod struct {
	Namespace, Name, Node string
}

func podKey(p *pod) (informer.NamespacedKey, error) {
	return informer.NamespacedKey{Namespace: p.Namespace, Name: p.Name}, nil
}

// fixture runs a group of two informers: "endpoints" (string keys, a region
// index, a handler blocked in a call) and "pods" (namespaced keys, failing
// its lists).
func fixture(t *testing.T) (srv *httptest.Server, release func()) {
	eps, err := memory.New(memory.Options[string, *endpoint]{KeyFunc: endpointKey})
	require.NoError(t, err)
	t.Cleanup(eps.Close)
	for _, e := range []*endpoint{{"a", "eu"}, {"b", "eu"}, {"c", "us"}} {
		_, err := eps.Put(e)
		require.NoError(t, err)
	}
	g := informer.NewGroup()
	inf, err := informer.InformerFor(g, informer.Options[string, *endpoint]{
		Name: "endpoints", Source: eps, KeyFunc: endpointKey,
		Indexes: []informer.Index[*endpoint]{{Name: "region", Func: func(dst []string, e *endpoint) ([]string, error) {
			return append(dst, e.Region), nil
		}}},
	})
	require.NoError(t, err)
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	_, err = inf.AddHandler(informer.HandlerFuncs[string, *endpoint]{AddFunc: func(e *endpoint, _ bool) {
		if e.Name == "a" {
			entered <- struct{}{}
			<-gate
		}
	}}, informer.HandlerOptions{Name: "slow", Coalesce: true})
	require.NoError(t, err)
	denied := &informer.SourceFuncs[*pod]{
		ListFunc: func(context.Context, informer.ListOptions) (informer.ListPage[*pod], error) {
			return informer.ListPage[*pod]{}, errors.New("pods are forbidden")
		},
		WatchFunc: func(context.Context, informer.WatchOptions) (informer.Watcher[*pod], error) {
			return nil, errors.New("pods are forbidden")
		},
	}
	// The page must show the pods informer's failure: the fixture waits for
	// its first one (Health has it before the ErrorHandler is told).
	denial := make(chan struct{}, 1)
	_, err = informer.InformerFor(g, informer.Options[informer.NamespacedKey, *pod]{Name: "pods", Source: denied, KeyFunc: podKey,
		Logger: logr.FromSlogHandler(slog.DiscardHandler),
		ErrorHandler: func(context.Context, error) {
			select {
			case denial <- struct{}{}:
			default:
			}
		}})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Run(ctx) }()
	require.NoError(t, informer.WaitForSync(t.Context(), inf))
	<-entered
	<-denial
	srv = httptest.NewServer(debughttp.Handler(g))
	var once bool
	release = func() {
		if !once {
			once = true
			close(gate)
		}
	}
	t.Cleanup(func() {
		srv.Close()
		release()
		cancel()
		require.NoError(t, <-done)
	})
	return srv, release
}

func get(t *testing.T, url string) (int, string, string) {
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

func TestJSON(t *testing.T) {
	srv, _ := fixture(t)
	status, ctype, body := get(t, srv.URL+"?format=json")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "application/json", ctype)
	var page debughttp.Page
	require.NoError(t, json.Unmarshal([]byte(body), &page))
	require.Len(t, page.Informers, 2)

	eps := page.Informers[0]
	assert.Equal(t, "endpoints", eps.Name)
	assert.Equal(t, "string → *debughttp_test.endpoint", eps.Types)
	assert.True(t, eps.Running)
	assert.True(t, eps.Synced)
	assert.Equal(t, 3, eps.Objects)
	assert.NotEmpty(t, eps.AppliedVersion)
	assert.NotNil(t, eps.LastListAt)
	assert.Equal(t, []informer.IndexStat{{Name: "region", Values: 2}}, eps.Indexes)
	require.Len(t, eps.Handlers, 1)
	h := eps.Handlers[0]
	assert.Equal(t, "slow", h.Name)
	assert.True(t, h.Coalesce)
	assert.False(t, h.Synced)
	assert.Equal(t, 2, h.Backlog, "b, c (coalesced keys) behind a")
	assert.Equal(t, "a", h.RunningKey)
	assert.Greater(t, h.RunningSeconds, 0.0)
	assert.Equal(t, "slow", eps.LongestCall)

	assert.False(t, h.Stuck, "under the default threshold (30 s)")
	assert.Equal(t, 30.0, eps.StuckThresholdSeconds)
	assert.Equal(t, int64(1), eps.Lists)
	assert.Equal(t, []debughttp.Problem{{Level: "warning", Text: "handler slow has not synced: 2 notifications behind"}}, eps.Problems)

	pods := page.Informers[1]
	assert.Equal(t, "pods", pods.Name)
	assert.False(t, pods.Synced)
	assert.Contains(t, pods.LastError, "pods are forbidden")
	assert.NotNil(t, pods.LastErrorAt)
	assert.Nil(t, pods.LastListAt)
	assert.Empty(t, pods.Handlers)
	assert.Equal(t, []informer.IndexStat{}, pods.Indexes)
	assert.Positive(t, pods.Errors[informer.ErrorClassListWatch])
	require.NotEmpty(t, pods.Problems)
	assert.Equal(t, "error", pods.Problems[0].Level)
	assert.Contains(t, pods.Problems[0].Text, "not synced: the source's latest answer")
}

// Every key of the JSON documents is camelCase: no Go field names.
func TestJSONCamelCase(t *testing.T) {
	srv, _ := fixture(t)
	for _, query := range []string{"?format=json", "?format=json&informer=endpoints"} {
		_, _, body := get(t, srv.URL+query)
		var doc any
		require.NoError(t, json.Unmarshal([]byte(body), &doc))
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, e := range v {
					if path != ".informers[].errors" { // keyed by error class
						assert.Regexp(t, `^[a-z][A-Za-z]*$`, k, "%s in %s", path, query)
					}
					walk(path+"."+k, e)
				}
			case []any:
				for _, e := range v {
					walk(path+"[]", e)
				}
			}
		}
		walk("", doc)
	}
	_, _, body := get(t, srv.URL+"?format=json")
	assert.Contains(t, body, `"indexes": [
        {
          "name": "region",
          "values": 2
        }`)
}

func TestHTMLParses(t *testing.T) {
	srv, _ := fixture(t)
	status, ctype, body := get(t, srv.URL)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "text/html; charset=utf-8", ctype)
	assert.True(t, strings.HasPrefix(body, "<!DOCTYPE html>\n"))
	cards := parseHTML(t, body)
	assert.Equal(t, []string{"endpoints", "pods"}, cards)
	assert.Equal(t, 1, strings.Count(body, "pods are forbidden"), "the pods informer's error, once: as its last error, not in its problems nor at the top")
	assert.Contains(t, body, "not synced: the source&#39;s latest answer, ")
	assert.Contains(t, body, "<code>region</code> (2)")
	assert.Contains(t, body, " on <code>a</code></td>", "the slow handler's call in progress and its key")
	assert.Contains(t, body, `href="?informer=endpoints"`, "a link to browse the keys")
	assert.NotContains(t, body, "http-equiv", "no auto-refresh by default")
	assert.NotContains(t, body, "metrics-link", "no metrics link without the option")

	status, ctype, body = get(t, srv.URL+"?informer=pods")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "text/html; charset=utf-8", ctype)
	assert.Equal(t, []string{"pods"}, parseHTML(t, body))
	assert.Contains(t, body, "No keys.")
}

// parseHTML parses page strictly (with HTML's void elements and entities):
// every tag is closed and nested properly. It returns the data-informer
// attributes of the informer cards, in order.
func parseHTML(t *testing.T, page string) []string {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(page))
	dec.Strict, dec.AutoClose, dec.Entity = true, xml.HTMLAutoClose, xml.HTMLEntity
	var cards []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return cards
		}
		require.NoError(t, err, "the page is well-formed")
		if el, ok := tok.(xml.StartElement); ok && el.Name.Local == "section" && strings.HasPrefix(attr(el, "class"), "card ") {
			cards = append(cards, attr(el, "data-informer"))
		}
	}
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func TestObjectByKey(t *testing.T) {
	srv, _ := fixture(t)
	status, _, body := get(t, srv.URL+"?informer=endpoints&key=b")
	require.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, `{"name":"b","region":"eu"}`, body)

	status, _, body = get(t, srv.URL+"?informer=endpoints&key=zz")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, body, "no object with key zz")

	status, _, body = get(t, srv.URL+"?informer=nope&key=a")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, body, "no informer named nope")
}

func TestReadOnly(t *testing.T) {
	srv, _ := fixture(t)
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, err := http.NewRequest(method, srv.URL, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, method)
		assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
	}
}
