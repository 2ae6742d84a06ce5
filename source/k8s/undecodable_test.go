package k8s_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// Gadget is a custom resource whose Go type reads spec.size as an integer,
// while its CRD stores any spec (x-kubernetes-preserve-unknown-fields): a
// gadget written with a string size does not decode into it.
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size int64 `json:"size"`
	} `json:"spec"`
}

func (g *Gadget) DeepCopyObject() runtime.Object {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

var gadgetGVR = schema.GroupVersionResource{Group: "ginformer.test", Version: "v1", Resource: "gadgets"}

var (
	gadgetCRDOnce sync.Once
	gadgetCRDErr  error
)

// installGadgetCRD installs the Gadget CRD once per process and waits
// until it is served.
func installGadgetCRD(t *testing.T) {
	t.Helper()
	gadgetCRDOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cs, err := apiextclient.NewForConfig(env.Config)
		if err != nil {
			gadgetCRDErr = err
			return
		}
		yes := true
		crd := &apiextv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: gadgetGVR.Resource + "." + gadgetGVR.Group},
			Spec: apiextv1.CustomResourceDefinitionSpec{
				Group: gadgetGVR.Group, Scope: apiextv1.NamespaceScoped,
				Names: apiextv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
				Versions: []apiextv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{
						Type: "object",
						Properties: map[string]apiextv1.JSONSchemaProps{
							"spec": {Type: "object", XPreserveUnknownFields: &yes},
						},
					}},
				}},
			},
		}
		_, err = cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			gadgetCRDErr = err
			return
		}
		dyn, err := dynamic.NewForConfig(env.Config)
		if err != nil {
			gadgetCRDErr = err
			return
		}
		for {
			if _, err := dyn.Resource(gadgetGVR).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
				return
			}
			select {
			case <-ctx.Done():
				gadgetCRDErr = fmt.Errorf("CRD %s not served: %w", crd.Name, ctx.Err())
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	require.NoError(t, gadgetCRDErr)
}

// gadgetLog records what an informer of gadgets hands on and reports.
type gadgetLog struct {
	mu      sync.Mutex
	deleted map[string]int
	decode  []*k8s.DecodeError
	changed chan struct{} // a receive after each record
}

func (l *gadgetLog) note(f func()) {
	l.mu.Lock()
	f()
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// until waits until cond holds (called under the lock).
func (l *gadgetLog) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	timeout := time.After(waitFor)
	for {
		l.mu.Lock()
		ok := cond()
		l.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-l.changed:
		case <-time.After(20 * time.Millisecond): // the cache is read, not only the log
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (l *gadgetLog) decodeError(name string) *k8s.DecodeError {
	for _, e := range l.decode {
		if e.Name == name {
			return e
		}
	}
	return nil
}

func startGadgets(t *testing.T, ns string) (*informer.SharedInformer[informer.NamespacedKey, *Gadget], *gadgetLog) {
	t.Helper()
	quiet := logr.FromSlogHandler(slog.DiscardHandler)
	src, err := k8s.NewForConfig[Gadget](env.Config, gadgetGVR, ns, k8s.Options{Logger: quiet})
	require.NoError(t, err)
	require.True(t, src.Decoding())
	log := &gadgetLog{deleted: map[string]int{}, changed: make(chan struct{}, 1)}
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *Gadget]{
		Name: "gadgets", Source: src, KeyFunc: k8s.Key[*Gadget], Logger: quiet,
		ErrorHandler: func(_ context.Context, err error) {
			var de *k8s.DecodeError
			if errors.As(err, &de) {
				if !errors.Is(err, informer.ErrDecode) {
					t.Errorf("a DecodeError without ErrDecode: %v", err)
				}
				log.note(func() { log.decode = append(log.decode, de) })
			}
		},
	})
	require.NoError(t, err)
	_, err = inf.AddHandler(informer.HandlerFuncs[informer.NamespacedKey, *Gadget]{
		DeleteFunc: func(d informer.Deletion[informer.NamespacedKey, *Gadget]) {
			log.note(func() { log.deleted[d.Key.Name]++ })
		},
	}, informer.HandlerOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	wctx, wcancel := context.WithTimeout(t.Context(), waitFor)
	defer wcancel()
	require.NoError(t, informer.WaitForSync(wctx, inf))
	return inf, log
}

// An update that does not decode (a custom resource whose stored JSON has
// a string where the Go type has an integer) is delivered as a deletion of
// the key and reported as a decode error naming namespace/name and
// version; a creation that does not decode is reported by name and not
// cached; a list names its bad items too. A good update brings the object
// back.
func TestUndecodableUpdateDeletesTheKey(t *testing.T) {
	e := needEnv(t)
	installGadgetCRD(t)
	ns := e.Namespace(t)
	ctx := t.Context()
	dyn, err := dynamic.NewForConfig(e.Config)
	require.NoError(t, err)
	gadgets := dyn.Resource(gadgetGVR).Namespace(ns)
	write := func(name string, size any) string {
		t.Helper()
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gadgetGVR.GroupVersion().String(), "kind": "Gadget",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"size": size},
		}}
		got, err := gadgets.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			u.SetResourceVersion(got.GetResourceVersion())
			got, err = gadgets.Update(ctx, u, metav1.UpdateOptions{})
		} else {
			got, err = gadgets.Create(ctx, u, metav1.CreateOptions{})
		}
		require.NoError(t, err)
		return got.GetResourceVersion()
	}
	write("g1", int64(1))
	write("g2", int64(2))
	inf, log := startGadgets(t, ns)
	key := func(name string) informer.NamespacedKey { return informer.NamespacedKey{Namespace: ns, Name: name} }
	cached := func(name string) (*Gadget, bool) { return inf.Lister().Get(key(name)) }
	_, ok := cached("g1")
	require.True(t, ok)

	// An update that does not decode: the key is deleted, never left stale.
	badRV := write("g1", "big")
	log.until(t, "g1's bad update delivered as a deletion", func() bool {
		_, ok := cached("g1")
		return log.deleted["g1"] == 1 && !ok && log.decodeError("g1") != nil
	})
	de := log.decodeError("g1")
	require.Equal(t, ns, de.Namespace)
	require.Equal(t, badRV, de.ResourceVersion)
	require.ErrorContains(t, de, fmt.Sprintf("%s/g1 at resourceVersion %s", ns, badRV))
	g2, ok := cached("g2")
	require.True(t, ok, "g2 untouched")
	require.EqualValues(t, 2, g2.Spec.Size)

	// A creation that does not decode: reported by name, not cached.
	badNew := write("g3", "huge")
	log.until(t, "g3 reported", func() bool { return log.decodeError("g3") != nil })
	require.Equal(t, badNew, log.decodeError("g3").ResourceVersion)
	_, ok = cached("g3")
	require.False(t, ok)

	// A good update brings g1 back.
	goodRV := write("g1", int64(3))
	wctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	require.NoError(t, inf.WaitForVersion(wctx, goodRV))
	g1, ok := cached("g1")
	require.True(t, ok, "g1 back after a good update")
	require.EqualValues(t, 3, g1.Spec.Size)

	// A list names the item that does not decode.
	_, log2 := startGadgets(t, ns)
	log2.until(t, "g3 reported by the list", func() bool { return log2.decodeError("g3") != nil })
	require.Equal(t, badNew, log2.decodeError("g3").ResourceVersion)
}
