package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ginformer/ginformer/source/k8s"
)

// isCRDLib reports whether lib is one of the -crd mode's libraries.
func isCRDLib(lib string) bool { return strings.HasPrefix(lib, crdPrefix) }

// newCRDInformer is newInformer for the -crd mode: lib's workload
// informer with the namespace index and a "node" index on spec.cluster,
// and c as its handler.
func newCRDInformer(ctx context.Context, lib, transform string, cfg *rest.Config, c *counter) (start func(), wait func(context.Context) error, keep any, err error) {
	if transform != "" && lib != libCRDClientGo {
		return nil, nil, nil, fmt.Errorf("-transform is for %s, not %s", libCRDClientGo, lib)
	}
	switch lib {
	case libCRDClientGo:
		rc, err := crdRESTClient(cfg)
		if err != nil {
			return nil, nil, nil, err
		}
		tf, err := crdTransform(transform)
		if err != nil {
			return nil, nil, nil, err
		}
		// What controller-runtime's typed cache builds for a Go type: a
		// ListWatch over the type's REST client, decoding JSON with the
		// scheme's codecs, into a SharedIndexInformer.
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				l := &workloadList{}
				return l, rc.Get().Resource(crdResource).VersionedParams(&o, metav1.ParameterCodec).Do(ctx).Into(l)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.Watch = true
				return rc.Get().Resource(crdResource).VersionedParams(&o, metav1.ParameterCodec).Watch(ctx)
			},
		}
		inf := cache.NewSharedIndexInformerWithOptions(lw, &workload{}, cache.SharedIndexInformerOptions{
			Indexers: cache.Indexers{
				cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
				"node": func(obj any) ([]string, error) {
					return []string{obj.(crdFielder).crdFields().node}, nil
				},
			},
		})
		if tf != nil {
			if err := inf.SetTransform(tf); err != nil {
				return nil, nil, nil, err
			}
		}
		return runClientGo(ctx, inf, func(obj any) podFields { return obj.(crdFielder).crdFields() }, c)
	case libCRDDynamic:
		dc, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, nil, nil, err
		}
		inf := dynamicinformer.NewFilteredDynamicInformer(dc, crdGVR, "", 0, cache.Indexers{
			cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
			"node": func(obj any) ([]string, error) {
				return []string{unstructuredFields(obj).node}, nil
			},
		}, nil).Informer()
		return runClientGo(ctx, inf, unstructuredFields, c)
	case libCRDGinformer:
		src, err := k8s.NewForConfig[workload](cfg, crdGVR, "", k8s.Options{})
		if err != nil {
			return nil, nil, nil, err
		}
		return runGinformer(ctx, src, (*workload).crdFields, c)
	case libCRDProjection:
		src, err := k8s.NewForConfig[workloadSlim](cfg, crdGVR, "", k8s.Options{})
		if err != nil {
			return nil, nil, nil, err
		}
		return runGinformer(ctx, src, (*workloadSlim).crdFields, c)
	}
	return nil, nil, nil, fmt.Errorf("unknown library %q", lib)
}

// unstructuredFields reads what the handler and the node index read of a
// workload the dynamic informer caches.
func unstructuredFields(obj any) podFields {
	u := obj.(*unstructured.Unstructured)
	cluster, _, _ := unstructured.NestedString(u.Object, "spec", "cluster")
	return podFields{node: cluster, labels: u.GetLabels(), rv: u.GetResourceVersion()}
}

// runClientGo adds c as inf's handler (fields reading each object) and
// returns newInformer's start, wait and keep for inf.
func runClientGo(ctx context.Context, inf cache.SharedIndexInformer, fields func(any) podFields, c *counter) (start func(), wait func(context.Context) error, keep any, err error) {
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, _ bool) {
			f := fields(obj)
			c.addFields(f.node, f.labels)
		},
		UpdateFunc: func(_, obj any) {
			f := fields(obj)
			c.updateFields(f.node, f.labels, f.rv)
		},
	})
	if err != nil {
		return nil, nil, nil, err
	}
	start = func() { go inf.RunWithContext(ctx) }
	// As newInformer's: poll every millisecond once every add is handled.
	wait = func(ctx context.Context) error {
		for !inf.HasSynced() || !reg.HasSynced() {
			select {
			case <-ctx.Done():
				return errors.New("client-go informer did not sync")
			case <-time.After(time.Millisecond):
			}
		}
		return nil
	}
	return start, wait, inf, nil
}

// crdTransform is clientGoTransform for workloads: nil for "", one that
// strips managedFields, or one that builds a workloadSlim.
func crdTransform(name string) (cache.TransformFunc, error) {
	switch name {
	case "":
		return nil, nil
	case transformStrip:
		return func(obj any) (any, error) {
			if w, ok := obj.(*workload); ok {
				w.ManagedFields = nil
			}
			return obj, nil
		}, nil
	case transformSlim:
		return func(obj any) (any, error) {
			if w, ok := obj.(*workload); ok {
				return slimWorkload(w), nil
			}
			return obj, nil
		}, nil
	}
	return nil, fmt.Errorf("unknown transform %q (want %s or %s)", name, transformStrip, transformSlim)
}
