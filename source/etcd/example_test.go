package etcd_test

import (
	"context"
	"fmt"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// A typed source over a prefix: list it, then watch the changes after the
// list.
func ExampleNew() {
	srv, err := etcdtest.Start(etcdtest.Config{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	cli, err := srv.Client()
	if err != nil {
		panic(err)
	}
	defer cli.Close()
	ctx := context.Background()

	type Service struct {
		Region string `json:"region"`
	}
	_, _ = cli.Put(ctx, "/services/checkout", `{"region":"eu-west"}`)

	src, err := etcd.New(etcd.Options[Service]{Client: cli, Prefix: "/services/", StripPrefix: true})
	if err != nil {
		panic(err)
	}
	page, err := src.List(ctx, informer.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, o := range page.Items {
		fmt.Println("listed", o.Key, o.Value.Region)
	}
	w, err := src.Watch(ctx, informer.WatchOptions{Version: page.Version})
	if err != nil {
		panic(err)
	}
	defer w.Stop()
	_, _ = cli.Put(ctx, "/services/search", `{"region":"us-east"}`)
	_, _ = cli.Delete(ctx, "/services/checkout")
	for ev := range w.Events() {
		if ev.Type == informer.EventBookmark {
			continue
		}
		fmt.Println(ev.Type, ev.Object.Key, ev.Object.Value.Region)
		if ev.Type == informer.EventDeleted {
			break
		}
	}
	// Output:
	// listed checkout eu-west
	// Added search us-east
	// Deleted checkout eu-west
}
