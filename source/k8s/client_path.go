package k8s

import (
	"reflect"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// Where a source's requests go, beyond its lists and watches: the
// caught-up probe of a NotifyCaughtUp watch (catchup.go) and the snapshot
// identity (snapshot.go) need the REST client, the resource and the
// namespace of the client the source was made from. Typed clients expose
// the REST client (restPathOf, rest.go); dynamic and metadata clients keep
// it, with the GroupVersionResource, in unexported fields, read here.

// request returns a GET of the resource in namespace ns ("" for all
// namespaces or a cluster-scoped resource), or of its object name when
// name is not "".
func (p restPath) request(ns, name string) *rest.Request {
	if p.gv == nil {
		r := p.client.Get().NamespaceIfScoped(ns, ns != "").Resource(p.resource)
		if name != "" {
			r = r.Name(name)
		}
		return r
	}
	// The REST client of a dynamic or metadata client has no versioned
	// path: the path is built in full, as those clients build it.
	seg := []string{"/api"}
	if p.gv.Group != "" {
		seg = []string{"/apis", p.gv.Group}
	}
	seg = append(seg, p.gv.Version)
	if ns != "" {
		seg = append(seg, "namespaces", ns)
	}
	seg = append(seg, p.resource)
	if name != "" {
		seg = append(seg, name)
	}
	return p.client.Get().AbsPath(seg...)
}

// url returns the address of the resource the source serves, with the
// namespace of its client: scheme, host, path prefix, group, version,
// namespace and resource ("https://10.0.0.1:6443/api/v1/namespaces/default/pods").
func (p restPath) url() string { return p.request(p.namespace, "").URL().String() }

// clientPathOf returns where the requests of lw go: for client-go's
// generated typed clients (restPathOf), and for its dynamic and metadata
// clients (dyn.Resource(gvr).Namespace(ns), meta.Resource(gvr)), whose
// REST client, GroupVersionResource and namespace are read from their
// unexported fields (dynamic.dynamicResourceClient and metadata.client:
// client, namespace, resource), as nothing exports them. ok is false for
// any other client (a fake, a wrapper) and when the layout differs.
func clientPathOf(lw any) (restPath, bool) {
	if p, ok := restPathOf(lw); ok {
		return p, true
	}
	v := reflect.ValueOf(lw)
	gvrV, ok := fieldOf(v, "resource")
	if !ok {
		return restPath{}, false
	}
	gvr, ok := gvrV.Interface().(schema.GroupVersionResource)
	if !ok || gvr.Version == "" || gvr.Resource == "" {
		return restPath{}, false
	}
	nsV, ok := fieldOf(v, "namespace")
	if !ok || nsV.Kind() != reflect.String {
		return restPath{}, false
	}
	outer, ok := fieldOf(v, "client") // *dynamic.DynamicClient, *metadata.Client
	if !ok {
		return restPath{}, false
	}
	inner, ok := fieldOf(outer, "client") // rest.Interface, *rest.RESTClient
	if !ok {
		return restPath{}, false
	}
	rc, ok := inner.Interface().(rest.Interface)
	if !ok || isNilInterface(rc) {
		return restPath{}, false
	}
	if c, ok := rc.(*rest.RESTClient); ok && c.Client == nil {
		return restPath{}, false
	}
	gv := gvr.GroupVersion()
	return restPath{client: rc, namespace: nsV.String(), resource: gvr.Resource, gv: &gv}, true
}

// fieldOf returns the field name of the struct v points to, made readable
// when it is unexported (through its address: v must be a pointer, or an
// interface holding one). ok is false when there is no such field.
func fieldOf(v reflect.Value, name string) (reflect.Value, bool) {
	for v.Kind() == reflect.Interface {
		if v.IsNil() {
			return reflect.Value{}, false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return reflect.Value{}, false
	}
	v = v.Elem()
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	f := v.FieldByName(name)
	if !f.IsValid() {
		return reflect.Value{}, false
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem(), true
}

// isNilInterface reports whether i is nil or holds a nil pointer.
func isNilInterface(i any) bool {
	if i == nil {
		return true
	}
	v := reflect.ValueOf(i)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
