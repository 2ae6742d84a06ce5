package main

import (
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/ginformer/ginformer/informer"
)

// What a child counts of its own requests and decoding.

// Kinds of requests, as requestKind names them.
const (
	reqList          = "LIST pods"
	reqListOne       = "LIST one pod name (the catch-up's revision probe)"
	reqStreamingList = "WATCH pods, sendInitialEvents=true (streaming list)"
	reqWatch         = "WATCH pods"
	reqGetPod        = "GET one pod (the catch-up probe of the resource)"
	reqGetEvent      = "GET one event (the catch-up probe of etcd's revision)"
	reqGetNamespace  = "GET namespace kube-system (the snapshot identity)"
)

// requestKind names what req asks for: one of the req constants, else
// its method and path.
func requestKind(req *http.Request) string {
	path, q := req.URL.Path, req.URL.Query()
	watch := q.Get("watch") == "true" || q.Get("watch") == "1"
	switch {
	case req.Method != http.MethodGet:
		return req.Method + " " + path
	case strings.HasSuffix(path, "/pods") && watch && q.Get("sendInitialEvents") == "true":
		return reqStreamingList
	case strings.HasSuffix(path, "/pods") && watch:
		return reqWatch
	case strings.HasSuffix(path, "/pods") && strings.HasPrefix(q.Get("fieldSelector"), "metadata.name="):
		return reqListOne
	case strings.HasSuffix(path, "/pods"):
		return reqList
	case strings.Contains(path, "/pods/"):
		return reqGetPod
	case strings.Contains(path, "/events/"):
		return reqGetEvent
	case strings.HasSuffix(path, "/namespaces/kube-system"):
		return reqGetNamespace
	}
	return "GET " + path
}

// requestLog counts the requests a client sends, by kind and by kind and
// response status. Safe for concurrent use.
type requestLog struct {
	mu       sync.Mutex
	byKind   map[string]int64
	byStatus map[string]int64 // "kind → status"
}

func newRequestLog() *requestLog {
	return &requestLog{byKind: map[string]int64{}, byStatus: map[string]int64{}}
}

// wrap is a rest.Config.WrapTransport: it counts every request that
// reaches the transport (retries included).
func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		kind := requestKind(req)
		resp, err := rt.RoundTrip(req)
		status := "error"
		if err == nil {
			status = strconv.Itoa(resp.StatusCode)
		}
		l.mu.Lock()
		l.byKind[kind]++
		l.byStatus[kind+" → "+status]++
		l.mu.Unlock()
		return resp, err
	})
}

// counts returns copies of the counts so far.
func (l *requestLog) counts() requestCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	return requestCounts{ByKind: maps.Clone(l.byKind), ByStatus: maps.Clone(l.byStatus)}
}

// requestCounts is what a requestLog counted.
type requestCounts struct {
	ByKind   map[string]int64 `json:"byKind"`
	ByStatus map[string]int64 `json:"byStatus"`
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// decodeCount tells, after a relist, the pods the source decoded from the
// ones it handed on again undecoded. The source's snapshot codec records
// each restored pod as delivered (source/k8s, known.go); a relist then
// hands on the restored object itself for a pod at the same
// resourceVersion, and decodes the others into new objects. The informer
// calls ObjectVersion on each listed pod whose key it caches: a pod that is
// not one of the restored objects was decoded. Safe for concurrent use.
type decodeCount struct {
	mu       sync.Mutex
	restored map[*corev1.Pod]struct{}
	fresh    map[*corev1.Pod]struct{} // listed pods that are not restored objects
}

func newDecodeCount() *decodeCount {
	return &decodeCount{restored: map[*corev1.Pod]struct{}{}, fresh: map[*corev1.Pod]struct{}{}}
}

// codec wraps the snapshot codec c: what it decodes is recorded as
// restored. Same format: the snapshot is the same file.
func (d *decodeCount) codec(c informer.Codec[*corev1.Pod]) informer.Codec[*corev1.Pod] {
	return countingCodec{Codec: c, d: d}
}

// objectVersion is Options.ObjectVersion: the source's (the
// resourceVersion), recording the listed pods that are not restored
// objects.
func (d *decodeCount) objectVersion(p *corev1.Pod) string {
	d.mu.Lock()
	if _, ok := d.restored[p]; !ok {
		d.fresh[p] = struct{}{}
	}
	d.mu.Unlock()
	return p.ResourceVersion
}

// counts returns how many pods were restored and how many listed pods
// were not restored objects.
func (d *decodeCount) counts() (restored, fresh int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.restored), len(d.fresh)
}

type countingCodec struct {
	informer.Codec[*corev1.Pod]
	d *decodeCount
}

func (c countingCodec) Decode(data []byte) (*corev1.Pod, error) {
	p, err := c.Codec.Decode(data)
	if err == nil {
		c.d.mu.Lock()
		c.d.restored[p] = struct{}{}
		c.d.mu.Unlock()
	}
	return p, err
}
