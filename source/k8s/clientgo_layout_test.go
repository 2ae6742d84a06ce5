package k8s

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// The reflection on client-go's unexported fields (restPathOf in rest.go,
// clientPathOf in client_path.go), checked against the client-go this
// module is built with, for every typed client of a kubernetes.Clientset
// and for the dynamic and metadata clients. No server is needed: the
// clients are only built. scripts/clientgo-next.sh runs these against the
// newest client-go; docs/k8s.md, "Upgrade checklist", lists what they pin.

// layoutHost is the address of the clients built here; nothing is sent.
const layoutHost = "https://127.0.0.1:1"

// layoutFailure is the message of a fallback: what stops working, and
// where to look.
func layoutFailure(field string) string {
	return "the client-go this module is built with changed the layout the source reads by reflection (" + field + "); " +
		"the source falls back silently: see docs/k8s.md, Upgrade checklist"
}

func layoutConfig() *rest.Config { return &rest.Config{Host: layoutHost} }

// groupVersion matches the names of the group clients of a Clientset
// (CoreV1, AppsV1, StorageV1beta1, ...).
var groupVersion = regexp.MustCompile(`V[0-9]+((alpha|beta)[0-9]+)?$`)

// TestTypedClientLayout: restPathOf finds the REST client, namespace and
// resource (gentype.Client.resource, unexported) of every typed client of a
// kubernetes.Clientset: Group().Resources(ns) or Group().Resources(). The
// resource is the method's name in lower case.
func TestTypedClientLayout(t *testing.T) {
	cs, err := kubernetes.NewForConfig(layoutConfig())
	if err != nil {
		t.Fatal(err)
	}
	restClientT := reflect.TypeFor[rest.Interface]()
	clients := 0
	csV := reflect.ValueOf(cs)
	for i := range csV.NumMethod() {
		m, name := csV.Method(i), csV.Type().Method(i).Name
		if m.Type().NumIn() != 0 || m.Type().NumOut() != 1 || !groupVersion.MatchString(name) {
			continue
		}
		group := m.Call(nil)[0]
		rc := group.MethodByName("RESTClient")
		if !rc.IsValid() {
			continue
		}
		for j := range group.NumMethod() {
			cm, cname := group.Method(j), group.Type().Method(j).Name
			ct := cm.Type()
			if cname == "RESTClient" || ct.NumOut() != 1 || ct.Out(0) == restClientT {
				continue
			}
			ns := ""
			var args []reflect.Value
			switch {
			case ct.NumIn() == 1 && ct.In(0).Kind() == reflect.String:
				ns = "ns1"
				args = []reflect.Value{reflect.ValueOf(ns)}
			case ct.NumIn() != 0:
				continue
			}
			client := cm.Call(args)[0].Interface()
			clients++
			what := name + "()." + cname + "(" + ns + ")"
			p, ok := restPathOf(client)
			if !ok {
				t.Errorf("%s (%T): restPathOf found no gentype.Client.resource: New does not decode (Decoding false) "+
					"and NotifyCaughtUp is unsupported. %s", what, client, layoutFailure("gentype.Client.resource"))
				continue
			}
			if want := strings.ToLower(cname); p.resource != want {
				t.Errorf("%s: resource %q, want %q. %s", what, p.resource, want, layoutFailure("gentype.Client.resource"))
			}
			if p.namespace != ns {
				t.Errorf("%s: namespace %q, want %q (GetNamespace)", what, p.namespace, ns)
			}
			if p.client != rc.Call(nil)[0].Interface() {
				t.Errorf("%s: GetClient is not the group's RESTClient", what)
			}
		}
	}
	if clients < 50 {
		t.Fatalf("found only %d typed clients on kubernetes.Clientset: the test no longer enumerates them", clients)
	}
	t.Logf("%d typed clients", clients)
}

// TestClientPathURL: the requests of the path read from each kind of
// client go where the client's own would.
func TestClientPathURL(t *testing.T) {
	cs, err := kubernetes.NewForConfig(layoutConfig())
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(layoutConfig())
	if err != nil {
		t.Fatal(err)
	}
	meta, err := metadata.NewForConfig(layoutConfig())
	if err != nil {
		t.Fatal(err)
	}
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deploys := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	nodes := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	for _, tc := range []struct {
		name, field string
		client      any
		want        string
	}{
		{"typed pods ns1", "gentype.Client.resource", cs.CoreV1().Pods("ns1"), "/api/v1/namespaces/ns1/pods"},
		{"typed pods", "gentype.Client.resource", cs.CoreV1().Pods(""), "/api/v1/pods"},
		{"typed deployments", "gentype.Client.resource", cs.AppsV1().Deployments("ns1"), "/apis/apps/v1/namespaces/ns1/deployments"},
		{"typed nodes", "gentype.Client.resource", cs.CoreV1().Nodes(), "/api/v1/nodes"},
		{"dynamic pods ns1", "dynamic.dynamicResourceClient{client, namespace, resource}, DynamicClient.client", dyn.Resource(pods).Namespace("ns1"), "/api/v1/namespaces/ns1/pods"},
		{"dynamic deployments", "dynamic.dynamicResourceClient{client, namespace, resource}, DynamicClient.client", dyn.Resource(deploys), "/apis/apps/v1/deployments"},
		{"dynamic nodes", "dynamic.dynamicResourceClient{client, namespace, resource}, DynamicClient.client", dyn.Resource(nodes), "/api/v1/nodes"},
		{"metadata pods ns1", "metadata.client{client, namespace, resource}, metadata.Client.client", meta.Resource(pods).Namespace("ns1"), "/api/v1/namespaces/ns1/pods"},
		{"metadata deployments", "metadata.client{client, namespace, resource}, metadata.Client.client", meta.Resource(deploys).Namespace("ns1"), "/apis/apps/v1/namespaces/ns1/deployments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := clientPathOf(tc.client)
			if !ok {
				t.Fatalf("clientPathOf(%T) found no path: NotifyCaughtUp is unsupported and the snapshot identity "+
					"names no server for this client. %s", tc.client, layoutFailure(tc.field))
			}
			if got := p.url(); got != layoutHost+tc.want {
				t.Fatalf("path %q, want %q. %s", got, layoutHost+tc.want, layoutFailure(tc.field))
			}
		})
	}
}

// TestDecodingClientset: a source made from a kubernetes.Clientset's typed
// client decodes itself; sources of dynamic and metadata clients know
// their path.
func TestDecodingClientset(t *testing.T) {
	cs, err := kubernetes.NewForConfig(layoutConfig())
	if err != nil {
		t.Fatal(err)
	}
	src, err := New(cs.CoreV1().Pods("ns1"), func(l *corev1.PodList) []corev1.Pod { return l.Items }, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !src.Decoding() {
		t.Fatalf("New(clientset.CoreV1().Pods): Decoding() is false. %s", layoutFailure("gentype.Client.resource"))
	}
	proj, err := NewProjection[corev1.Pod](cs.CoreV1().Pods("ns1"), Options{})
	if err != nil {
		t.Fatalf("NewProjection(clientset.CoreV1().Pods): %v. %s", err, layoutFailure("gentype.Client.resource"))
	}
	if !proj.Decoding() {
		t.Fatalf("NewProjection: Decoding() is false. %s", layoutFailure("gentype.Client.resource"))
	}
	dyn, err := dynamic.NewForConfig(layoutConfig())
	if err != nil {
		t.Fatal(err)
	}
	dsrc, err := NewDynamic(dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if dsrc.path == nil {
		t.Fatalf("NewDynamic: no path. %s", layoutFailure("dynamic.dynamicResourceClient"))
	}
	meta, err := metadata.NewForConfig(layoutConfig())
	if err != nil {
		t.Fatal(err)
	}
	msrc, err := NewMetadata(meta.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if msrc.path == nil {
		t.Fatalf("NewMetadata: no path. %s", layoutFailure("metadata.client"))
	}
}
