package k8s

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/informer"
)

// NewForConfig returns a source over the resource gvr of the API that cfg
// reaches, decoding the server's responses itself straight into T, for
// resources without a generated clientset: custom resources whose Go type
// the program defines (a struct with metav1.TypeMeta and metav1.ObjectMeta
// and DeepCopyObject), with no unstructured step in between.
//
//	type Widget struct {
//		metav1.TypeMeta   `json:",inline"`
//		metav1.ObjectMeta `json:"metadata,omitempty"`
//		Spec              WidgetSpec `json:"spec"`
//	}
//
//	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
//	src, err := k8s.NewForConfig[Widget](cfg, gvr, "default", k8s.Options{})
//
// namespace is the namespace to list and watch, "" for all namespaces or a
// cluster-scoped resource. gvr.Resource is the plural, lower-case name the
// API serves (as in kubectl get widgets.example.com).
//
// Requests go through a REST client client-go builds from a copy of cfg
// (rest.RESTClientFor), for gvr's group and version: cfg's TLS,
// authentication, impersonation, QPS and Burst (or RateLimiter) and user
// agent (rest.DefaultKubernetesUserAgent when empty) apply. Responses are
// decoded as [New] decodes those of generated typed clients: on all cores,
// managedFields dropped unless [Options.KeepManagedFields], repeated
// strings shared unless [Options.DisableStringSharing], an object that does
// not decode counted ([Source.DecodeErrors]), reported (to the informer:
// class decode) and left out (a
// deletion still delivered with the object's metadata). [Source.Decoding]
// is always true; [Options.DisableDecoding] does not apply.
//
// The wire format is JSON, decoded into T with its json tags (case
// sensitive, as client-go decodes), unless T is a generated type of
// k8s.io/api that client-go's scheme (k8s.io/client-go/kubernetes/scheme)
// registers under gvr's group and version (NewForConfig[corev1.Pod] with
// {Version: "v1", Resource: "pods"}): then protobuf, as client-go's typed
// clients ask for it. Either way a content type set in cfg (ContentType,
// AcceptContentTypes) is kept, and the source decodes whichever of JSON and
// protobuf the server answers. As with client-go's typed clients, the
// decoded objects' apiVersion and kind (TypeMeta) are empty: the Go type
// is the kind.
//
// Possible errors: [informer.ErrInvalidOptions] (a nil cfg, an empty
// gvr.Version or gvr.Resource, T *unstructured.Unstructured (use
// [NewDynamic]), a selector that does not parse, a cfg client-go refuses:
// a malformed host, unreadable certificates).
func NewForConfig[E any, T ObjectPtr[E]](cfg *rest.Config, gvr schema.GroupVersionResource, namespace string, opts Options) (*Source[T], error) {
	if cfg == nil {
		return nil, fmt.Errorf("k8s: NewForConfig: nil rest.Config: %w", informer.ErrInvalidOptions)
	}
	if gvr.Version == "" || gvr.Resource == "" {
		return nil, fmt.Errorf("k8s: NewForConfig: %v: a version and a resource are required: %w", gvr, informer.ErrInvalidOptions)
	}
	if _, ok := any(T(new(E))).(*unstructured.Unstructured); ok {
		// The decoder clears a typed object's kind, which an Unstructured
		// holds in its content.
		return nil, fmt.Errorf("k8s: NewForConfig: *unstructured.Unstructured: use NewDynamic: %w", informer.ErrInvalidOptions)
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	c := newCodec[E, T](opts)
	gv := gvr.GroupVersion()
	var itemsField protowire.Number
	if c.proto {
		itemsField = builtinItemsField[E](gv)
	}

	rc := rest.CopyConfig(cfg)
	rc.GroupVersion = &gv
	rc.APIPath = "/apis"
	if gv.Group == "" {
		rc.APIPath = "/api"
	}
	// Decodes the server's Status (errors) in JSON and protobuf, for any
	// group.
	rc.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	if rc.UserAgent == "" {
		rc.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if itemsField == 0 && rc.ContentType == "" && rc.AcceptContentTypes == "" {
		// JSON, whatever client-go's defaults (CBOR when its
		// ClientsPreferCBOR gate is on), as the source decodes JSON.
		rc.ContentType = runtime.ContentTypeJSON
		rc.AcceptContentTypes = runtime.ContentTypeJSON
	}
	client, err := rest.RESTClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("k8s: NewForConfig %v: %w: %w", gvr, informer.ErrInvalidOptions, err)
	}
	bad := &decodeErrors{log: opts.Logger}
	d := &decodingClient[E, T]{
		path:       restPath{client: client, namespace: namespace, resource: gvr.Resource},
		itemsField: itemsField,
		codec:      c,
		bad:        bad,
	}
	return d.newSource(opts), nil
}

// builtinItemsField returns the protobuf field number of the Items of E's
// list type if client-go's scheme registers E under gv (a type of
// k8s.io/api served by the apiserver itself), and 0 otherwise (then the
// source asks for JSON).
func builtinItemsField[E any](gv schema.GroupVersion) protowire.Number {
	obj, ok := any(new(E)).(runtime.Object)
	if !ok {
		return 0
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return 0
	}
	for _, gvk := range gvks {
		if gvk.GroupVersion() != gv {
			continue
		}
		list, err := scheme.Scheme.New(gv.WithKind(gvk.Kind + "List"))
		if err != nil {
			return 0
		}
		lt := reflect.TypeOf(list)
		for lt.Kind() == reflect.Pointer {
			lt = lt.Elem()
		}
		if lt.Kind() != reflect.Struct {
			return 0
		}
		f, ok := lt.FieldByName("Items")
		if !ok || f.Type != reflect.TypeFor[[]E]() {
			return 0
		}
		parts := strings.Split(f.Tag.Get("protobuf"), ",")
		if len(parts) < 2 {
			return 0
		}
		n, err := strconv.Atoi(parts[1])
		if err != nil || n <= 0 {
			return 0
		}
		return protowire.Number(n)
	}
	return 0
}
