package prometheus_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// exposition is one scrape of a registry, parsed from the text format.
type exposition map[string]*dto.MetricFamily

// scrape serves reg through promhttp on an httptest server, scrapes it
// once and parses the answer.
func scrape(t *testing.T, reg *prometheus.Registry) exposition {
	t.Helper()
	return newScraper(t, reg).scrape(t)
}

// scraper is an httptest server exposing a registry through promhttp, as a
// program would on /metrics. It is closed when the test ends.
type scraper struct{ srv *httptest.Server }

func newScraper(t *testing.T, reg *prometheus.Registry) scraper {
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	t.Cleanup(srv.Close)
	return scraper{srv}
}

// scrape GETs the exposition asking for the text format, and parses it with
// expfmt's TextParser.
func (s scraper) scrape(t *testing.T) exposition {
	t.Helper()
	srv := s.srv
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("scrape: Content-Type %q, want the text format", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse the exposition: %v", err)
	}
	return fams
}

// waitFor scrapes until cond holds of the exposition, and returns that
// exposition; it fails the test after 20 s, showing what it last saw.
func (s scraper) waitFor(t *testing.T, what string, cond func(exposition) bool) exposition {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		e := s.scrape(t)
		if cond(e) {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; the exposition has:\n%s", what, e.names())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// get returns the value of a counter or gauge series, and 0 if there is no
// such series (a counter not incremented yet).
func (e exposition) get(name string, labels ...string) float64 {
	m := e.series(name, labels...)
	switch {
	case m == nil:
		return 0
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	return 0
}

// series finds the series of family name whose labels are exactly labels
// (name=value pairs). It returns nil if there is none.
func (e exposition) series(name string, labels ...string) *dto.Metric {
	f := e[name]
	if f == nil {
		return nil
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return m
		}
	}
	return nil
}

// value returns the value of a counter or gauge series, failing the test if
// there is no such series.
func (e exposition) value(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	m := e.series(name, labels...)
	if m == nil {
		t.Fatalf("no series %s%v; the exposition has:\n%s", name, labels, e.names())
	}
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	t.Fatalf("%s%v is neither a counter nor a gauge", name, labels)
	return 0
}

// histogram returns a histogram series, failing the test if there is none.
func (e exposition) histogram(t *testing.T, name string, labels ...string) *dto.Histogram {
	t.Helper()
	m := e.series(name, labels...)
	if m == nil || m.Histogram == nil {
		t.Fatalf("no histogram %s%v; the exposition has:\n%s", name, labels, e.names())
	}
	return m.GetHistogram()
}

// bucket returns the cumulative count of h's bucket with upper bound le.
func bucket(t *testing.T, h *dto.Histogram, le float64) uint64 {
	t.Helper()
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == le {
			return b.GetCumulativeCount()
		}
	}
	t.Fatalf("no bucket le=%v", le)
	return 0
}

// names lists the series and their values (a histogram's count), for
// failure messages.
func (e exposition) names() string {
	var lines []string
	for name, f := range e {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, lp.GetName()+"="+lp.GetValue())
			}
			v := e.get(name, labelPairs(m)...)
			if m.Histogram != nil {
				v = float64(m.GetHistogram().GetSampleCount())
			}
			lines = append(lines, fmt.Sprintf("%s{%s} %v", name, strings.Join(ls, ","), v))
		}
	}
	sort.Strings(lines)
	return strings.Join(slices.Compact(lines), "\n")
}

func labelPairs(m *dto.Metric) []string {
	var ls []string
	for _, lp := range m.GetLabel() {
		ls = append(ls, lp.GetName(), lp.GetValue())
	}
	return ls
}
