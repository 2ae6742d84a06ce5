package debughttp

import (
	"embed"
	"html/template"
	"net/url"
	"strconv"
	"time"
)

// The HTML pages: templates/*.html (html/template) and static/page.css,
// embedded in the binary. Laid out for a window 1280 px wide (and narrower)
// without horizontal scrolling: one card per informer, facts in a grid
// that wraps, handlers in a table of fixed layout, and long versions, keys
// and errors broken anywhere. Problems are coloured by level (classes
// "error" and "warning"); browser_test.go checks the layout and the
// colours in Chromium.

// overview is the data of the main page.
type overview struct {
	Head head
	Page pageView
}

// attention is one problem in the list at the top of the main page.
type attention struct {
	Index int // of the informer's card
	Name  string
	problem
}

// Attention lists every informer's problems, errors first.
func (o overview) Attention() []attention {
	var errs, warns []attention
	for i, inf := range o.Page.Informers {
		for _, p := range inf.Problems {
			a := attention{Index: i, Name: inf.Name, problem: p}
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
	Page     keysPage
	Informer informerView
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
	"css":      func() template.CSS { return styleSheet },
}

// The templates and the style sheet, parsed once. Each page is its own
// template file plus layout.html (the top, the badges and the bottom every
// page shares); the style sheet goes into every page's <style> element.
var (
	//go:embed templates/*.html static/page.css
	files embed.FS

	overviewTemplate = parse("overview.html")
	keysTemplate     = parse("keys.html")
)

// parse returns the page templates/name, with the layout and funcs.
func parse(name string) *template.Template {
	return template.Must(template.New(name).Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/"+name))
}

// styleSheet is static/page.css, trusted as CSS: it is ours, embedded.
var styleSheet = func() template.CSS {
	b, err := files.ReadFile("static/page.css")
	if err != nil {
		panic(err) // embedded above: cannot happen
	}
	return template.CSS(b)
}()
