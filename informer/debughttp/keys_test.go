package debughttp_test

import (
	"encoding/json"
	"fmt"
	"iter"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/informer/debughttp"
)

// fakeInspector is an informer as the page sees it, in whatever state a
// test sets, its keys in the order given. It counts the passes over its
// keys.
type fakeInspector struct {
	health    informer.Health
	threshold time.Duration
	keys      []string
	passes    atomic.Int64
}

var _ informer.Inspector = (*fakeInspector)(nil)

func (f *fakeInspector) Health() informer.Health              { return f.health }
func (f *fakeInspector) Types() string                        { return "string → *fake" }
func (f *fakeInspector) IndexStats() []informer.IndexStat     { return nil }
func (f *fakeInspector) StuckHandlerThreshold() time.Duration { return f.threshold }

func (f *fakeInspector) ObjectJSON(key string) ([]byte, bool, error) {
	if !slices.Contains(f.keys, key) {
		return nil, false, nil
	}
	data, err := json.Marshal(map[string]string{"key": key})
	return data, true, err
}

func (f *fakeInspector) FormattedKeys() iter.Seq[string] {
	return func(yield func(string) bool) {
		f.passes.Add(1)
		for _, k := range f.keys {
			if !yield(k) {
				return
			}
		}
	}
}

func serveFakes(t *testing.T, infs ...*fakeInspector) *httptest.Server {
	t.Helper()
	list := make(debughttp.Informers, len(infs))
	for i, f := range infs {
		list[i] = f
	}
	srv := httptest.NewServer(debughttp.Handler(list))
	t.Cleanup(srv.Close)
	return srv
}

func getKeys(t *testing.T, srv *httptest.Server, query url.Values) debughttp.KeysPage {
	t.Helper()
	query.Set("format", "json")
	status, _, body := get(t, srv.URL+"?"+query.Encode())
	require.Equal(t, http.StatusOK, status, body)
	var p debughttp.KeysPage
	require.NoError(t, json.Unmarshal([]byte(body), &p))
	return p
}

// Paging forward from the first page and backward from the last visits
// every matching key once, in order, one pass over the keys per page,
// against a sorted model of the keys.
func TestKeysPaging(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var keys []string
	for i := range 1234 {
		keys = append(keys, fmt.Sprintf("ns-%d/obj-%04d", i%5, rng.IntN(100000)))
	}
	keys = append(keys, "", "ns-0/", "zzz") // the empty key sorts first
	slices.Sort(keys)
	keys = slices.Compact(keys)
	model := slices.Clone(keys)
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	f := &fakeInspector{health: informer.Health{Name: "objs"}, keys: keys}
	srv := serveFakes(t, f)

	for _, tc := range []struct {
		name   string
		search url.Values
		want   func(string) bool
	}{
		{"all", url.Values{}, func(string) bool { return true }},
		{"contains", url.Values{"q": {"obj-00"}}, func(k string) bool { return strings.Contains(k, "obj-00") }},
		{"prefix", url.Values{"q": {"ns-3/"}, "match": {"prefix"}}, func(k string) bool { return strings.HasPrefix(k, "ns-3/") }},
		{"none", url.Values{"q": {"nothing"}}, func(string) bool { return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := slices.DeleteFunc(slices.Clone(model), func(k string) bool { return !tc.want(k) })
			query := func(set ...string) url.Values {
				q := url.Values{"informer": {"objs"}, "limit": {"50"}}
				for k, v := range tc.search {
					q[k] = v
				}
				for i := 0; i < len(set); i += 2 {
					q.Set(set[i], set[i+1])
				}
				return q
			}
			forward := []string{}
			before := f.passes.Load()
			p := getKeys(t, srv, query())
			pages := 1
			assert.False(t, p.HasPrev)
			for {
				assert.Equal(t, len(want), p.Matched)
				assert.Equal(t, len(forward), p.Offset)
				assert.LessOrEqual(t, len(p.Keys), 50)
				forward = append(forward, p.Keys...)
				if !p.HasNext {
					break
				}
				p = getKeys(t, srv, query("after", p.Keys[len(p.Keys)-1]))
				pages++
				assert.True(t, p.HasPrev)
			}
			assert.Equal(t, want, forward, "forward")
			assert.Equal(t, int64(pages), f.passes.Load()-before, "one pass over the keys per page")

			backward := []string{}
			p = getKeys(t, srv, query("last", "1"))
			assert.False(t, p.HasNext)
			for {
				assert.Equal(t, len(want)-len(backward)-len(p.Keys), p.Offset)
				backward = append(slices.Clone(p.Keys), backward...)
				if !p.HasPrev {
					break
				}
				p = getKeys(t, srv, query("before", p.Keys[0]))
				assert.True(t, p.HasNext)
			}
			assert.Equal(t, want, backward, "backward")
		})
	}

	// Past either end: an empty page that links back.
	p := getKeys(t, srv, url.Values{"informer": {"objs"}, "after": {"zzzz"}})
	assert.Empty(t, p.Keys)
	assert.True(t, p.HasPrev)
	assert.False(t, p.HasNext)
	assert.Equal(t, len(model), p.Offset)
	p = getKeys(t, srv, url.Values{"informer": {"objs"}, "before": {""}})
	assert.Empty(t, p.Keys)
	assert.False(t, p.HasPrev)
	assert.True(t, p.HasNext)
	_, _, body := get(t, srv.URL+"?informer=objs&after=zzzz")
	assert.Contains(t, body, `class="prev-link"`)
	assert.Contains(t, body, `href="?informer=objs&amp;last=1" class="prev-link"`)
}

// The limits: a bounded page and search, exclusive cursors, unknown names.
func TestKeysRequests(t *testing.T) {
	f := &fakeInspector{health: informer.Health{Name: "objs"}}
	for i := range 2000 {
		f.keys = append(f.keys, fmt.Sprintf("k%05d", i))
	}
	srv := serveFakes(t, f)

	p := getKeys(t, srv, url.Values{"informer": {"objs"}})
	assert.Len(t, p.Keys, debughttp.DefaultKeysLimit)
	assert.Equal(t, "contains", p.Match)
	p = getKeys(t, srv, url.Values{"informer": {"objs"}, "limit": {"5000"}})
	assert.Len(t, p.Keys, debughttp.MaxKeysLimit)
	assert.Equal(t, debughttp.MaxKeysLimit, p.Limit)

	for _, tc := range []struct {
		query  string
		status int
		msg    string
	}{
		{"informer=nope", http.StatusNotFound, "no informer named nope"},
		{"informer=objs&limit=0", http.StatusBadRequest, "limit"},
		{"informer=objs&limit=x", http.StatusBadRequest, "limit"},
		{"informer=objs&match=regexp", http.StatusBadRequest, "match"},
		{"informer=objs&q=" + strings.Repeat("a", debughttp.MaxSearchLen+1), http.StatusBadRequest, "q: at most"},
		{"informer=objs&after=a&before=b", http.StatusBadRequest, "exclusive"},
		{"informer=objs&after=a&last=1", http.StatusBadRequest, "exclusive"},
	} {
		for _, format := range []string{"", "&format=json"} {
			status, ctype, body := get(t, srv.URL+"?"+tc.query+format)
			assert.Equal(t, tc.status, status, tc.query+format)
			assert.Contains(t, body, tc.msg, tc.query+format)
			if format != "" {
				assert.Equal(t, "application/json", ctype)
			}
		}
	}

	// Each key links to its object.
	_, _, body := get(t, srv.URL+"?informer=objs&q=k0004")
	assert.Contains(t, body, `<a href="?informer=objs&amp;key=k00042">k00042</a>`)
	status, _, body := get(t, srv.URL+"?informer=objs&key=k00042")
	assert.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, `{"key":"k00042"}`, body)
}

// Keys are shown escaped, in text and in links.
func TestKeysEscaped(t *testing.T) {
	key := `<script>alert("x")</script>&?#/ü`
	srv := serveFakes(t, &fakeInspector{health: informer.Health{Name: `a<b>&"c"`}, keys: []string{key}})
	status, _, body := get(t, srv.URL+"?"+url.Values{"informer": {`a<b>&"c"`}}.Encode())
	require.Equal(t, http.StatusOK, status)
	assert.NotContains(t, body, "<script>")
	assert.NotContains(t, body, "a<b>")
	assert.Contains(t, body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;?#/ü")
	parseHTML(t, body)
	// The key's link, decoded, finds the object.
	i := strings.Index(body, `<ol class="keys mono" start="1">`)
	require.Positive(t, i)
	href := body[strings.Index(body[i:], `href="`)+i+len(`href="`):]
	href = strings.ReplaceAll(href[:strings.IndexByte(href, '"')], "&amp;", "&")
	status, _, obj := get(t, srv.URL+href)
	require.Equal(t, http.StatusOK, status, href)
	var got map[string]string
	require.NoError(t, json.Unmarshal([]byte(obj), &got))
	assert.Equal(t, key, got["key"])
}

// The rich fixture's services, browsed to the end through the JSON pages:
// every key of the real informer (namespaced keys), sorted.
func TestKeysOfAnInformer(t *testing.T) {
	srv := richFixture(t)
	var want []string
	for i := range richServiceCount {
		want = append(want, serviceKey(i).String())
	}
	slices.Sort(want)
	var got []string
	q := url.Values{"informer": {richServices}, "limit": {"1000"}}
	for {
		status, _, body := get(t, srv.URL+"/debug/informers?"+q.Encode()+"&format=json")
		require.Equal(t, http.StatusOK, status)
		var p debughttp.KeysPage
		require.NoError(t, json.Unmarshal([]byte(body), &p))
		got = append(got, p.Keys...)
		if !p.HasNext {
			break
		}
		q.Set("after", p.Keys[len(p.Keys)-1])
	}
	assert.Equal(t, want, got)
	status, _, body := get(t, srv.URL+"/debug/informers?"+url.Values{"informer": {richServices}, "key": {want[0]}}.Encode())
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, `"Name":"svc-00000"`)
}
