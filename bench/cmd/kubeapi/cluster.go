package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/bench/internal/kubepods"
)

// servedSizes returns the average size of a served pod as JSON and as
// protobuf, over up to 50 pods spread over the collection.
func servedSizes(ctx context.Context, cs kubernetes.Interface, n int) (jsonB, protoB float64, err error) {
	samples := min(n, 50)
	for k := range samples {
		ns, name := kubepods.Name(k * n / samples)
		for _, accept := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
			b, err := cs.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").Name(name).
				SetHeader("Accept", accept).DoRaw(ctx)
			if err != nil {
				return 0, 0, err
			}
			if accept == "application/json" {
				jsonB += float64(len(b))
			} else {
				protoB += float64(len(b))
			}
		}
	}
	return jsonB / float64(samples), protoB / float64(samples), nil
}

// compression asks the server for a page of 500 pods and for a watch, as
// JSON and as protobuf, each with Accept-Encoding: gzip, and describes what
// came back.
func compression(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface) ([]string, error) {
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: rt, Timeout: time.Minute}
	defer hc.CloseIdleConnections()
	var out []string
	for _, accept := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		for _, q := range []string{"limit=500", "watch=1&resourceVersion=0",
			"watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"} {
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			req, err := http.NewRequestWithContext(rctx, http.MethodGet, cs.CoreV1().RESTClient().Get().Resource("pods").URL().String()+"?"+q, nil)
			if err != nil {
				cancel()
				return nil, err
			}
			req.Header.Set("Accept", accept)
			req.Header.Set("Accept-Encoding", "gzip") // set by hand: the transport does not decompress
			resp, err := hc.Do(req)
			if err != nil {
				cancel()
				return nil, err
			}
			var n int64
			if q == "limit=500" {
				n, _ = io.Copy(io.Discard, resp.Body)
			}
			_ = resp.Body.Close()
			cancel()
			enc := resp.Header.Get("Content-Encoding")
			if enc == "" {
				enc = "none"
			}
			what := "list of 500"
			if strings.Contains(q, "sendInitialEvents") {
				what = "streaming list (watch with sendInitialEvents)"
			} else if q != "limit=500" {
				what = "watch"
			}
			s := fmt.Sprintf("%s, Accept %s: HTTP %d, Content-Encoding %s", what, accept, resp.StatusCode, enc)
			if n > 0 {
				s += fmt.Sprintf(", %.1f MB on the wire", float64(n)/1e6)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// writeUpdates patches the status of w random pods (the Ready condition's
// probe time and message, as a kubelet does) from writers goroutines, at
// rate writes per second offered (0: as fast as they go; see pacer), and
// returns, for each write, the resourceVersion it produced and when its
// response arrived.
//
// Each patch carries a message unique to the phase (seed) and the write,
// so that none is a no-op: a no-op patch writes nothing and sends no
// event.
func writeUpdates(ctx context.Context, cs kubernetes.Interface, n, w, writers, rate int, seed uint64) ([]update, error) {
	out := make([]update, w)
	pace := newPacer(rate)
	err := kubepods.Parallel(ctx, w, writers, func(ctx context.Context, k int) error {
		if err := pace.wait(ctx, k); err != nil {
			return err
		}
		r := rand.New(rand.NewPCG(seed, uint64(k)))
		ns, name := kubepods.Name(r.IntN(n))
		var p *corev1.Pod
		var sent int64
		err := kubepods.Retry(ctx, func() (err error) {
			sent = time.Now().UnixNano()
			p, err = cs.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, kubepods.StatusPatch(int(seed)*w+k, time.Now()),
				metav1.PatchOptions{FieldManager: "kubelet"}, "status")
			return err
		})
		if err != nil {
			return fmt.Errorf("update %s/%s: %w", ns, name, err)
		}
		out[k] = update{RV: p.ResourceVersion, NS: time.Now().UnixNano(), Sent: sent}
		return nil
	}, nil)
	if err != nil {
		return nil, err
	}
	return out, distinctVersions(out)
}

// distinctVersions checks that every write returned its own
// resourceVersion: two alike mean a patch was a no-op.
func distinctVersions(out []update) error {
	rvs := map[string]bool{}
	for _, u := range out {
		if rvs[u.RV] {
			return fmt.Errorf("two writes returned resourceVersion %s: a patch was a no-op", u.RV)
		}
		rvs[u.RV] = true
	}
	return nil
}
