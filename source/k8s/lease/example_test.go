package lease_test

import (
	"context"
	"os"
	"os/signal"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/source/k8s/lease"
)

// Each replica of a controller registers with a Lease in its namespace and
// acts only on the objects it owns. This one runs in a pod (in-cluster
// config, POD_NAME from the downward API) whose service account may get,
// list, watch, create, update and delete leases in the namespace; the tests
// of this package run the same wiring against a real kube-apiserver.
func ExampleNew() {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		panic(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		panic(err)
	}
	m, err := lease.New(lease.Options{
		Client: client.CoordinationV1().Leases("my-namespace"),
		Group:  "my-controller",
		Name:   os.Getenv("POD_NAME"),
	})
	if err != nil {
		panic(err)
	}
	owner, err := shard.NewOwner(shard.OwnerOptions{
		Membership: m,
		Hash:       shard.Hash, // the apiserver's hash: Owns(string(obj.UID)) matches a ShardSelector on metadata.uid
		OnChange: func(c shard.OwnershipChange) {
			// Re-enqueue the objects of c.Acquired: their events may have
			// arrived while another replica owned them.
		},
	})
	if err != nil {
		panic(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() { _ = owner.Run(ctx) }) // runs the membership too
	// In handlers and workers: if owner.Owns(string(obj.UID)) { reconcile(obj) }
	wg.Wait()
}
