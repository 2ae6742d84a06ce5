package debughttp

import (
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ginformer/ginformer/informer"
)

// Source lists the informers to show. *[informer.Group] implements it; a
// program with informers outside a group can implement it with a func:
// see [Informers].
type Source interface {
	Inspectors() []informer.Inspector
}

// Informers is a fixed list of informers as a [Source].
type Informers []informer.Inspector

// Inspectors returns the list.
func (s Informers) Inspectors() []informer.Inspector { return s }

// Option configures [Handler]. Without any, the page has no metrics link.
type Option func(*config)

// config is what the Options set.
type config struct {
	metricsHref string
}

// WithMetricsLink puts a link to the program's metrics (for example
// "/metrics", or an absolute URL of a dashboard) beside the JSON link at
// the top of the page. Without it (or with ""), there is no such link.
func WithMetricsLink(href string) Option {
	return func(c *config) { c.metricsHref = href }
}

// Handler returns the debug page over src. It is safe for concurrent use.
func Handler(src Source, opts ...Option) http.Handler {
	h := &handler{src: src, scans: make(chan struct{}, 1)}
	for _, o := range opts {
		o(&h.cfg)
	}
	return h
}

type handler struct {
	src Source
	cfg config
	// scans holds a token while a key scan runs: one at a time.
	scans chan struct{}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "debughttp: read-only: GET or HEAD", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	asJSON := q.Get("format") == "json"
	switch {
	case q.Has("key"):
		h.serveObject(w, q.Get("informer"), q.Get("key"))
	case q.Has("informer"):
		h.serveKeys(w, r, q, asJSON)
	case asJSON:
		writeJSON(w, http.StatusOK, h.snapshot())
	default:
		page := h.snapshot()
		h.render(w, overviewTemplate, overview{Page: page, Head: h.head(q, "informers")})
	}
}

// find returns the informer named name.
func (h *handler) find(name string) (informer.Inspector, bool) {
	for _, inf := range h.src.Inspectors() {
		if inf.Health().Name == name {
			return inf, true
		}
	}
	return nil, false
}

// serveObject writes one cached object as JSON.
func (h *handler) serveObject(w http.ResponseWriter, name, key string) {
	inf, ok := h.find(name)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no informer named " + name})
		return
	}
	data, found, err := inf.ObjectJSON(key)
	switch {
	case err != nil:
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
	case !found:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no object with key " + key + " in informer " + name})
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(data)
	}
}

// serveKeys writes a page of an informer's keys.
func (h *handler) serveKeys(w http.ResponseWriter, r *http.Request, q url.Values, asJSON bool) {
	fail := func(status int, msg string) {
		if asJSON {
			writeJSON(w, status, map[string]string{"error": msg})
			return
		}
		http.Error(w, "debughttp: "+msg, status)
	}
	name := q.Get("informer")
	inf, ok := h.find(name)
	if !ok {
		fail(http.StatusNotFound, "no informer named "+name)
		return
	}
	kq, err := parseKeyQuery(q)
	if err != nil {
		fail(http.StatusBadRequest, err.Error())
		return
	}
	select {
	case h.scans <- struct{}{}:
	case <-r.Context().Done():
		fail(http.StatusServiceUnavailable, "gave up waiting for another key scan")
		return
	}
	page := scanKeys(inf.FormattedKeys(), kq)
	<-h.scans
	page.Informer = name
	if asJSON {
		writeJSON(w, http.StatusOK, page)
		return
	}
	h.render(w, keysTemplate, keysView{
		Head:     h.head(q, "keys of "+name),
		Page:     page,
		Informer: view(inf, time.Now()),
		Links:    page.links(q),
	})
}

func (h *handler) render(w http.ResponseWriter, t *template.Template, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := t.Execute(w, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// head is what the top of every HTML page shows.
type head struct {
	Title   string
	Refresh int    // seconds; 0: off
	Metrics string // href; "": no link
	// RefreshLinks turn the auto-refresh off or on at a few periods.
	RefreshLinks []refreshLink
}

type refreshLink struct {
	Label, Href string
	Current     bool
}

// refreshPeriods are the periods the page offers, in seconds.
var refreshPeriods = []int{5, 30}

// head reads ?refresh= and builds the links that change it, keeping the
// rest of the query.
func (h *handler) head(q url.Values, title string) head {
	hd := head{Title: title, Metrics: h.cfg.metricsHref}
	if n, err := strconv.Atoi(q.Get("refresh")); err == nil && n >= 1 && n <= 3600 {
		hd.Refresh = n
	}
	with := func(n int) string {
		v := url.Values{}
		for k, vs := range q {
			v[k] = vs
		}
		v.Del("refresh")
		if n > 0 {
			v.Set("refresh", strconv.Itoa(n))
		}
		return "?" + v.Encode()
	}
	hd.RefreshLinks = append(hd.RefreshLinks, refreshLink{Label: "off", Href: with(0), Current: hd.Refresh == 0})
	for _, n := range refreshPeriods {
		hd.RefreshLinks = append(hd.RefreshLinks, refreshLink{Label: strconv.Itoa(n) + " s", Href: with(n), Current: hd.Refresh == n})
	}
	return hd
}
