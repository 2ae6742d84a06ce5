package debughttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/informer/debughttp"
	"github.com/ginformer/ginformer/source/memory"
)

// Mount the page in the program's own mux (behind its own auth), then read
// it as JSON.
func ExampleHandler() {
	src, _ := memory.New(memory.Options[string, *endpoint]{KeyFunc: endpointKey})
	defer src.Close()
	_, _ = src.Put(&endpoint{"a", "eu"})

	g := informer.NewGroup()
	_, _ = informer.InformerFor(g, informer.Options[string, *endpoint]{Name: "endpoints", Source: src, KeyFunc: endpointKey})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Run(ctx) }()
	_ = g.WaitForSync(ctx)

	mux := http.NewServeMux()
	mux.Handle("/debug/informers", debughttp.Handler(g))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// The JSON document is the contract (its schema is in the package doc):
	// decode the keys the program needs.
	resp, _ := http.Get(srv.URL + "/debug/informers?format=json")
	var page struct {
		Informers []struct {
			Name    string `json:"name"`
			Types   string `json:"types"`
			Synced  bool   `json:"synced"`
			Objects int    `json:"objects"`
		} `json:"informers"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	for _, inf := range page.Informers {
		fmt.Printf("%s (%s): synced=%v objects=%d\n", inf.Name, inf.Types, inf.Synced, inf.Objects)
	}
	cancel()
	<-done
	// Output:
	// endpoints (string → *debughttp_test.endpoint): synced=true objects=1
}

// Browse an informer's keys a page at a time, as JSON: ?informer= takes
// the informer's name, ?after= the last key of the page before.
func ExampleHandler_keys() {
	src, _ := memory.New(memory.Options[string, *endpoint]{KeyFunc: endpointKey})
	defer src.Close()
	for _, name := range []string{"e", "b", "d", "a", "c"} {
		_, _ = src.Put(&endpoint{name, "eu"})
	}
	g := informer.NewGroup()
	_, _ = informer.InformerFor(g, informer.Options[string, *endpoint]{Name: "endpoints", Source: src, KeyFunc: endpointKey})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Run(ctx) }()
	_ = g.WaitForSync(ctx)
	srv := httptest.NewServer(debughttp.Handler(g, debughttp.WithMetricsLink("/metrics")))
	defer srv.Close()

	query := "?informer=endpoints&limit=2&format=json"
	for {
		resp, _ := http.Get(srv.URL + query)
		var page struct {
			Keys    []string `json:"keys"`
			Matched int      `json:"matched"`
			Offset  int      `json:"offset"`
			HasNext bool     `json:"hasNext"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		fmt.Printf("keys %d-%d of %d: %v\n", page.Offset+1, page.Offset+len(page.Keys), page.Matched, page.Keys)
		if !page.HasNext {
			break
		}
		query = "?informer=endpoints&limit=2&format=json&after=" + url.QueryEscape(page.Keys[len(page.Keys)-1])
	}
	cancel()
	<-done
	// Output:
	// keys 1-2 of 5: [a b]
	// keys 3-4 of 5: [c d]
	// keys 5-5 of 5: [e]
}
