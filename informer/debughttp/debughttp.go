// Package debughttp serves a read-only page that shows what the informers
// of a [informer.Group] are doing: for each, its types, whether it is
// running and synced, the version its cache has applied and when, the time
// of the last list, event and error, queue depth, object count, its indexes
// with their number of values, and its handlers with their backlog,
// coalescing, call in progress and stuck calls.
//
// Mount it in the program's own mux, behind the program's own
// authentication: it shows cached data (objects included, on request).
//
//	mux.Handle("/debug/informers", debughttp.Handler(group))
//
// Requests (GET or HEAD; any other method gets 405):
//
//	/debug/informers                        an HTML table, for people
//	/debug/informers?format=json            the same as JSON, for machines
//	/debug/informers?informer=N&key=K       the cached object of informer N
//	                                        whose key formats (%v) as K, as JSON
//
// The handler never writes to an informer and never waits for a source or a
// handler: it reads [informer.Inspector] views, which take a few short locks.
// It uses the standard library only.
package debughttp

import (
	"encoding/json"
	"html/template"
	"net/http"
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

// Handler returns the debug page over src. It is safe for concurrent use.
func Handler(src Source) http.Handler {
	return &handler{src: src}
}

type handler struct{ src Source }

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "debughttp: read-only: GET or HEAD", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	if name := q.Get("informer"); name != "" || q.Has("key") {
		h.serveObject(w, name, q.Get("key"))
		return
	}
	page := h.snapshot()
	if q.Get("format") == "json" {
		writeJSON(w, http.StatusOK, page)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pageTemplate.Execute(w, page); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// serveObject writes one cached object as JSON.
func (h *handler) serveObject(w http.ResponseWriter, name, key string) {
	for _, inf := range h.src.Inspectors() {
		if inf.Health().Name != name {
			continue
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
		return
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "no informer named " + name})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// Page is the JSON document of ?format=json.
type Page struct {
	// Time is when the snapshot was taken.
	Time      time.Time      `json:"time"`
	Informers []InformerView `json:"informers"`
}

// InformerView is one informer in a [Page]; see [informer.Health] for the
// meaning of each field. Times are omitted for what has not happened yet.
type InformerView struct {
	Name           string               `json:"name"`
	Types          string               `json:"types"`
	Running        bool                 `json:"running"`
	Synced         bool                 `json:"synced"`
	AppliedVersion string               `json:"appliedVersion,omitempty"`
	AppliedAt      *time.Time           `json:"appliedAt,omitempty"`
	LastListAt     *time.Time           `json:"lastListAt,omitempty"`
	LastEventAt    *time.Time           `json:"lastEventAt,omitempty"`
	LastError      string               `json:"lastError,omitempty"`
	LastErrorAt    *time.Time           `json:"lastErrorAt,omitempty"`
	QueueDepth     int                  `json:"queueDepth"`
	Objects        int                  `json:"objects"`
	Indexes        []informer.IndexStat `json:"indexes"`
	Handlers       []HandlerView        `json:"handlers"`
	// LongestCall names the handler whose call in progress has run
	// longest; empty when no handler is in a call.
	LongestCall string `json:"longestCall,omitempty"`
}

// HandlerView is one handler in an [InformerView].
type HandlerView struct {
	Name     string `json:"name"`
	Coalesce bool   `json:"coalesce"`
	Synced   bool   `json:"synced"`
	Backlog  int    `json:"backlog"`
	// RunningSeconds is how long the call in progress has run; 0 when idle.
	RunningSeconds float64 `json:"runningSeconds"`
	RunningKey     string  `json:"runningKey,omitempty"`
	StuckCalls     int64   `json:"stuckCalls"`
}

func (h *handler) snapshot() Page {
	infs := h.src.Inspectors()
	page := Page{Time: time.Now(), Informers: make([]InformerView, 0, len(infs))}
	for _, inf := range infs {
		hl := inf.Health()
		v := InformerView{
			Name: hl.Name, Types: inf.Types(), Running: hl.Running, Synced: hl.Synced,
			AppliedVersion: hl.AppliedVersion, AppliedAt: timeOrNil(hl.AppliedAt),
			LastListAt: timeOrNil(hl.LastListAt), LastEventAt: timeOrNil(hl.LastEventAt),
			LastErrorAt: timeOrNil(hl.LastErrorAt),
			QueueDepth:  hl.QueueDepth, Objects: hl.Objects,
			Indexes:  inf.IndexStats(),
			Handlers: make([]HandlerView, 0, len(hl.Handlers)),
		}
		if hl.LastError != nil {
			v.LastError = hl.LastError.Error()
		}
		if v.Indexes == nil {
			v.Indexes = []informer.IndexStat{}
		}
		for _, hh := range hl.Handlers {
			v.Handlers = append(v.Handlers, HandlerView{
				Name: hh.Name, Coalesce: hh.Coalesce, Synced: hh.Synced, Backlog: hh.Backlog,
				RunningSeconds: hh.Running.Seconds(), RunningKey: hh.RunningKey, StuckCalls: hh.StuckCalls,
			})
		}
		if longest, ok := hl.LongestCall(); ok {
			v.LongestCall = longest.Name
		}
		page.Informers = append(page.Informers, v)
	}
	return page
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"ago": func(t *time.Time, now time.Time) string {
		if t == nil {
			return "never"
		}
		return now.Sub(*t).Round(time.Millisecond).String() + " ago"
	},
	"secs": func(s float64) string {
		if s == 0 {
			return "idle"
		}
		return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
	},
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"/><title>informers</title>
<style>body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}.bad{color:#b00}</style>
</head>
<body>
<h1>Informers</h1>
<p>Cached data as of {{.Time.Format "2006-01-02T15:04:05.000Z07:00"}}. <a href="?format=json">JSON</a></p>
<table id="informers">
<thead><tr><th>name</th><th>types</th><th>running</th><th>synced</th><th>applied version</th><th>last list</th><th>last event</th><th>last error</th><th>queue</th><th>objects</th><th>indexes (values)</th><th>handlers</th></tr></thead>
<tbody>
{{- $now := .Time}}
{{- range .Informers}}
<tr>
<td>{{.Name}}</td><td>{{.Types}}</td><td>{{.Running}}</td><td>{{.Synced}}</td>
<td>{{.AppliedVersion}} ({{ago .AppliedAt $now}})</td>
<td>{{ago .LastListAt $now}}</td><td>{{ago .LastEventAt $now}}</td>
<td>{{if .LastError}}<span class="bad">{{.LastError}}</span> ({{ago .LastErrorAt $now}}){{else}}none{{end}}</td>
<td>{{.QueueDepth}}</td><td>{{.Objects}}</td>
<td>{{range .Indexes}}{{.Name}} ({{.Values}})<br/>{{end}}</td>
<td><table>
<tr><th>handler</th><th>synced</th><th>coalesce</th><th>backlog</th><th>call in progress</th><th>stuck calls</th></tr>
{{- range .Handlers}}
<tr><td>{{.Name}}</td><td>{{.Synced}}</td><td>{{.Coalesce}}</td><td>{{.Backlog}}</td><td>{{secs .RunningSeconds}}{{if .RunningKey}} on {{.RunningKey}}{{end}}</td><td>{{if .StuckCalls}}<span class="bad">{{.StuckCalls}}</span>{{else}}0{{end}}</td></tr>
{{- end}}
</table>{{if .LongestCall}}longest call: {{.LongestCall}}{{end}}</td>
</tr>
{{- end}}
</tbody>
</table>
</body>
</html>
`))
