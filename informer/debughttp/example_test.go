package debughttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

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

	resp, _ := http.Get(srv.URL + "/debug/informers?format=json")
	var page debughttp.Page
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
