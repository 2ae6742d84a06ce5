package debughttp

import (
	"html/template"
	"net/url"
	"strconv"
	"time"
)

// The HTML pages. Laid out for a window 1280 px wide (and narrower)
// without horizontal scrolling: one card per informer, facts in a grid
// that wraps, handlers in a table of fixed layout, and long versions, keys
// and errors broken anywhere. Problems are coloured by level (classes
// "error" and "warning"); browser_test.go checks the layout and the
// colours in Chromium.

// overview is the data of the main page.
type overview struct {
	Head head
	Page Page
}

// attention is one problem in the list at the top of the main page.
type attention struct {
	Index int // of the informer's card
	Name  string
	Problem
}

// Attention lists every informer's problems, errors first.
func (o overview) Attention() []attention {
	var errs, warns []attention
	for i, inf := range o.Page.Informers {
		for _, p := range inf.Problems {
			a := attention{Index: i, Name: inf.Name, Problem: p}
			if p.Level == levelError {
				errs = append(errs, a)
			} else {
				warns = append(warns, a)
			}
		}
	}
	return append(errs, warns...)
}

// keysView is the data of a page of keys.
type keysView struct {
	Head     head
	Page     KeysPage
	Informer InformerView
	Links    keysLinks
}

// Range says which matches the page holds, as "101–200".
func (k keysView) Range() string {
	if len(k.Page.Keys) == 0 {
		return "none"
	}
	return strconv.Itoa(k.Page.Offset+1) + "–" + strconv.Itoa(k.Page.Offset+len(k.Page.Keys))
}

// JSONHref is the page's own query with format=json.
func (k keysView) JSONHref() string {
	v := url.Values{"informer": {k.Page.Informer}, "format": {"json"}}
	if k.Page.Search != "" {
		v.Set("q", k.Page.Search)
		v.Set("match", k.Page.Match)
	}
	return "?" + v.Encode()
}

var funcs = template.FuncMap{
	"ago":  ago,
	"secs": secs,
	"bytes": func(n int64) string {
		return bytes(n)
	},
	"dur": func(s float64) string {
		if s == 0 {
			return "off"
		}
		return short(time.Duration(s * float64(time.Second)))
	},
	"stamp": func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.Format(time.RFC3339Nano)
	},
	"keysHref": func(name string) string { return "?" + url.Values{"informer": {name}}.Encode() },
	"keyHref":  keyHref,
	"plus":     func(a, b int) int { return a + b },
}

var (
	overviewTemplate = template.Must(template.New("overview").Funcs(funcs).Parse(layout + overviewHTML))
	keysTemplate     = template.Must(template.New("keys").Funcs(funcs).Parse(layout + keysHTML))
)

// layout is the top of every page, and the parts the pages share.
const layout = `{{define "top"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
{{- if .Refresh}}
<meta http-equiv="refresh" content="{{.Refresh}}"/>
{{- end}}
<title>{{.Title}}</title>
<style>
:root{--err:#b3261e;--errbg:#fce8e6;--warn:#8a5300;--warnbg:#fff3d6;--ok:#1e6b34;--okbg:#e6f4ea;--mute:#5f6368;--line:#dadce0}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#202124;background:#f4f5f7}
main{max-width:1240px;margin:0 auto;padding:0 16px 24px}
code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:13px}
code,dd,td,li{overflow-wrap:anywhere}
a{color:#1a57b8}
.top{display:flex;flex-wrap:wrap;align-items:baseline;gap:4px 20px;padding:10px 16px;background:#fff;border-bottom:1px solid var(--line);margin-bottom:12px}
.top h1{font-size:20px;margin:0}.top h1 a{color:inherit;text-decoration:none}
.top nav{display:flex;flex-wrap:wrap;gap:4px 16px;align-items:baseline}
.top .stamp{color:var(--mute)}
.summary{background:#fff;border:1px solid var(--line);border-radius:8px;padding:8px 14px;margin:0 0 12px}
.summary h2{font-size:15px;margin:4px 0}
.summary ul,.problems{margin:4px 0;padding-left:20px}
li.error{color:var(--err)}li.warning{color:var(--warn)}
.allok{color:var(--ok);font-weight:600}
.card{background:#fff;border:1px solid var(--line);border-left:6px solid #34a853;border-radius:8px;padding:10px 14px;margin:0 0 14px}
.card.warning{border-left-color:#f9ab00}.card.error{border-left-color:var(--err)}
.card-head{display:flex;flex-wrap:wrap;align-items:center;gap:6px 12px}
.card-head h2{font-size:18px;margin:0;overflow-wrap:anywhere}
.card-head .browse{margin-left:auto;font-weight:600}
.types{color:var(--mute);margin:2px 0 6px}
.badge{display:inline-block;padding:1px 9px;border-radius:10px;font-size:12px;font-weight:700;border:1px solid transparent}
.badge.ok{background:var(--okbg);color:var(--ok)}
.badge.warning{background:var(--warnbg);color:var(--warn);border-color:#f9ab00}
.badge.error{background:var(--err);color:#fff}
.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(190px,1fr));grid-auto-flow:row dense;gap:6px 18px;margin:8px 0}
.facts div{min-width:0}.facts .wide{grid-column:1/-1}
@media (min-width:700px){.facts .two{grid-column:span 2}}
.facts dt{color:var(--mute);font-size:12px}.facts dd{margin:0}
.facts dd.error{color:var(--err)}
.num{font-variant-numeric:tabular-nums}
table{width:100%;border-collapse:collapse;table-layout:fixed;margin-top:6px}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{font-size:12px;color:var(--mute);font-weight:600;background:#fafafa}
tr.stuck td{background:var(--errbg);color:var(--err);font-weight:600}
td.warn{color:var(--warn);font-weight:600}
.none{color:var(--mute)}
.search{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin:0 0 8px}
.search input[type=search]{width:360px;max-width:100%;padding:4px 6px}
.pager{display:flex;flex-wrap:wrap;gap:4px 16px;margin:6px 0}
.pager .off{color:var(--mute)}
ol.keys{columns:3 320px;column-gap:28px;background:#fff;border:1px solid var(--line);border-radius:8px;padding:10px 14px 10px 56px;margin:6px 0}
ol.keys li{break-inside:avoid}
</style>
</head>
<body>
<header class="top">
<h1><a href="?">Informers</a></h1>
<nav>
<a href="?format=json" id="json-link">JSON</a>
{{- if .Metrics}}
<a href="{{.Metrics}}" id="metrics-link">metrics</a>
{{- end}}
<span>auto-refresh:{{range .RefreshLinks}} {{if .Current}}<b>{{.Label}}</b>{{else}}<a href="{{.Href}}" class="refresh-link">{{.Label}}</a>{{end}}{{end}}</span>
</nav>
</header>
<main>
{{end -}}

{{define "badges"}}
{{- if .Running}}<span class="badge ok">running</span>{{else}}<span class="badge error">not running</span>{{end}}
{{if .Synced}}<span class="badge ok">synced</span>
{{- else if eq .Start "verifying"}}<span class="badge warning flag-restored">restored, unconfirmed</span>
{{- else if .Restored}}<span class="badge warning flag-restored">restored, catching up</span>
{{- else}}<span class="badge error flag-unsynced">not synced</span>{{end}}
{{- range .Handlers}}{{if .Stuck}} <span class="badge error flag-stuck">handler {{.Name}} stuck</span>{{end}}{{end}}
{{- end -}}

{{define "bottom"}}</main>
</body>
</html>
{{end}}`

const overviewHTML = `{{template "top" .Head}}
{{- $now := .Page.Time}}
<p class="stamp">{{len .Page.Informers}} informers, as of <time datetime="{{.Page.Time.Format "2006-01-02T15:04:05.000Z07:00"}}">{{.Page.Time.Format "2006-01-02 15:04:05.000 MST"}}</time>.</p>
{{- with .Attention}}
<section class="summary" id="attention">
<h2>Needs attention</h2>
<ul>
{{- range .}}
<li class="{{.Level}}"><a href="#informer-{{.Index}}">{{.Name}}</a>: {{.Text}}</li>
{{- end}}
</ul>
</section>
{{- else}}
<p class="allok" id="attention">All informers running and synced; no recent error, no stuck handler.</p>
{{- end}}
{{range $i, $inf := .Page.Informers}}
<section class="card {{.Level}}" id="informer-{{$i}}" data-informer="{{.Name}}">
<div class="card-head">
<h2>{{.Name}}</h2>
{{template "badges" .}}
<a class="browse" href="{{keysHref .Name}}">browse {{.Objects}} keys →</a>
</div>
<div class="types"><code>{{.Types}}</code></div>
{{- with .Problems}}
<ul class="problems">
{{- range .}}
<li class="{{.Level}}">{{.Text}}</li>
{{- end}}
</ul>
{{- end}}
<dl class="facts">
<div><dt>objects</dt><dd class="num">{{.Objects}}</dd></div>
<div><dt>queue depth</dt><dd class="num">{{.QueueDepth}}</dd></div>
<div><dt>lists / watch restarts</dt><dd class="num">{{.Lists}} / {{.WatchRestarts}}</dd></div>
<div><dt>errors by class</dt><dd>{{range $class, $n := .Errors}}{{$class}}: {{$n}}<br/>{{else}}<span class="none">none</span>{{end}}</dd></div>
<div class="two"><dt>applied version</dt><dd>{{if .AppliedVersion}}<code>{{.AppliedVersion}}</code>, <span title="{{stamp .AppliedAt}}">{{ago .AppliedAt $now}}</span>{{else}}<span class="none">none</span>{{end}}</dd></div>
<div><dt>last list</dt><dd title="{{stamp .LastListAt}}">{{ago .LastListAt $now}}</dd></div>
<div><dt>last event</dt><dd title="{{stamp .LastEventAt}}">{{ago .LastEventAt $now}}</dd></div>
<div><dt>stuck threshold</dt><dd>{{dur .StuckThresholdSeconds}}</dd></div>
{{- if .RestoredVersion}}
<div class="two"><dt>restored snapshot</dt><dd><code>{{.RestoredVersion}}</code>, loaded <span title="{{stamp .RestoredAt}}">{{ago .RestoredAt $now}}</span>{{if .Restored}}, <b>catching up</b>{{else}}, caught up{{end}}</dd></div>
{{- end}}
{{- if .Start}}
<div class="two"><dt>start</dt><dd class="start">{{.Start}}{{if .StartReason}}: {{.StartReason}}{{end}}</dd></div>
{{- end}}
{{- if .SnapshotAt}}
<div class="two"><dt>last snapshot written</dt><dd><code>{{.SnapshotVersion}}</code>, {{bytes .SnapshotBytes}}, <span title="{{stamp .SnapshotAt}}">{{ago .SnapshotAt $now}}</span></dd></div>
{{- end}}
<div class="wide"><dt>last error</dt>{{if .LastError}}<dd class="error"><span title="{{stamp .LastErrorAt}}">{{ago .LastErrorAt $now}}</span>: <code>{{.LastError}}</code></dd>{{else}}<dd class="none">none</dd>{{end}}</div>
<div class="wide"><dt>indexes (distinct values)</dt><dd>{{range $j, $x := .Indexes}}{{if $j}}, {{end}}<code>{{$x.Name}}</code> ({{$x.Values}}){{else}}<span class="none">none</span>{{end}}</dd></div>
</dl>
{{- if .Handlers}}
<table class="handlers">
<colgroup><col style="width:22%"/><col style="width:9%"/><col style="width:9%"/><col style="width:10%"/><col/><col style="width:11%"/></colgroup>
<thead><tr><th>handler</th><th>synced</th><th>coalesce</th><th>backlog</th><th>call in progress</th><th>stuck calls</th></tr></thead>
<tbody>
{{- range .Handlers}}
<tr{{if .Stuck}} class="stuck"{{end}} data-handler="{{.Name}}">
<td>{{.Name}}</td>
<td>{{if .Synced}}yes{{else}}no{{end}}</td>
<td>{{if .Coalesce}}yes{{else}}no{{end}}</td>
<td class="num">{{.Backlog}}</td>
<td>{{secs .RunningSeconds}}{{if .RunningKey}} on <code>{{.RunningKey}}</code>{{end}}{{if .Stuck}} (stuck){{end}}</td>
<td class="num{{if .StuckCalls}} warn{{end}}">{{.StuckCalls}}</td>
</tr>
{{- end}}
</tbody>
</table>
{{- if .LongestCall}}
<p class="types">longest call in progress: {{.LongestCall}}</p>
{{- end}}
{{- else}}
<p class="none">no handlers</p>
{{- end}}
</section>
{{- end}}
{{template "bottom"}}`

const keysHTML = `{{template "top" .Head}}
{{- $name := .Page.Informer}}
<p><a href="?" id="back-link">← all informers</a></p>
{{- with .Informer}}
<section class="card {{.Level}}" data-informer="{{.Name}}">
<div class="card-head">
<h2>{{.Name}}</h2>
{{template "badges" .}}
</div>
<div class="types"><code>{{.Types}}</code>, {{.Objects}} objects</div>
</section>
{{- end}}
<form class="search" method="get" action="">
<input type="hidden" name="informer" value="{{$name}}"/>
<label>key <input type="search" name="q" value="{{.Page.Search}}" maxlength="256" placeholder="part of a key"/></label>
<select name="match">
<option value="contains"{{if eq .Page.Match "contains"}} selected="selected"{{end}}>contains</option>
<option value="prefix"{{if eq .Page.Match "prefix"}} selected="selected"{{end}}>starts with</option>
</select>
<button type="submit">search</button>
{{- if .Page.Search}}
<a href="{{keysHref $name}}">clear</a>
{{- end}}
</form>
<p>Keys <b>{{.Range}}</b> of {{.Page.Matched}}{{if .Page.Search}} {{if eq .Page.Match "prefix"}}starting with{{else}}containing{{end}} <code>{{.Page.Search}}</code>{{end}}, sorted by key; each opens its cached object as JSON. <a href="{{.JSONHref}}">JSON</a></p>
{{- template "pager" .Links}}
{{- if .Page.Keys}}
<ol class="keys mono" start="{{plus .Page.Offset 1}}">
{{- range .Page.Keys}}
<li><a href="{{keyHref $name .}}">{{.}}</a></li>
{{- end}}
</ol>
{{- template "pager" .Links}}
{{- else}}
<p class="none">No keys{{if .Page.Search}} match{{end}}.</p>
{{- end}}
{{template "bottom"}}
{{define "pager"}}
<nav class="pager">
{{- if .First}}<a href="{{.First}}" class="first-link">« first</a>{{else}}<span class="off">« first</span>{{end}}
{{if .Prev}}<a href="{{.Prev}}" class="prev-link">‹ previous</a>{{else}}<span class="off">‹ previous</span>{{end}}
{{if .Next}}<a href="{{.Next}}" class="next-link">next ›</a>{{else}}<span class="off">next ›</span>{{end}}
{{if .Last}}<a href="{{.Last}}" class="last-link">last »</a>{{else}}<span class="off">last »</span>{{end}}
</nav>
{{- end}}`
