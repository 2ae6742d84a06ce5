package natskv_test

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/natskv"
	"github.com/ginformer/ginformer/source/natskv/natstest"
)

// A typed source over a KV bucket: list it, then watch the changes after
// the list.
func ExampleNew() {
	srv, err := natstest.Start(natstest.Config{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "services", History: 8})
	if err != nil {
		panic(err)
	}

	type Service struct {
		Region string `json:"region"`
	}
	_, _ = kv.Put(ctx, "checkout", []byte(`{"region":"eu-west"}`))

	src, err := natskv.New(natskv.Options[Service]{JetStream: js, Bucket: "services"})
	if err != nil {
		panic(err)
	}
	page, err := src.List(ctx, informer.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, o := range page.Items {
		fmt.Println("listed", o.Key, o.Value.Region, "at revision", page.Version)
	}
	w, err := src.Watch(ctx, informer.WatchOptions{Version: page.Version})
	if err != nil {
		panic(err)
	}
	defer w.Stop()
	_, _ = kv.Put(ctx, "search", []byte(`{"region":"us-east"}`))
	_ = kv.Delete(ctx, "checkout")
	for ev := range w.Events() {
		fmt.Println(ev.Type, ev.Object.Key, ev.Object.Value.Region, "at revision", ev.Version)
		if ev.Type == informer.EventDeleted {
			break
		}
	}
	// Output:
	// listed checkout eu-west at revision 1
	// Added search us-east at revision 2
	// Deleted checkout eu-west at revision 3
}
