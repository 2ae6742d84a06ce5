package k8s

import (
	"context"
	"fmt"
	"io"
	"mime"
	"reflect"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ginformer/ginformer/source/k8s/internal/wire"
)

// restClient is what client-go's generated typed clients (gentype.Client,
// under clientset.CoreV1().Pods(ns) and every other typed client) expose:
// the REST client built from the user's rest.Config, with its transport
// (TLS, authentication, impersonation, user agent) and rate limiter, and
// the namespace.
type restClient interface {
	GetClient() rest.Interface
	GetNamespace() string
}

// restPath is where a client's requests go (see client_path.go).
type restPath struct {
	client    rest.Interface
	namespace string
	resource  string
	// gv is set for the REST client of a dynamic or metadata client, which
	// has no versioned path: requests name the group and version in full.
	// nil for a typed client's REST client, whose base path has them.
	gv *schema.GroupVersion
}

// restPathOf returns the REST client, namespace and resource of a typed
// client, if lw is one of client-go's generated clients. The resource name
// is read from the client's unexported field (gentype.Client.resource), as
// nothing exports it; when the layout differs, ok is false and the source
// goes through the client's own List and Watch.
func restPathOf(lw any) (restPath, bool) {
	rc, ok := lw.(restClient)
	if !ok || rc.GetClient() == nil {
		return restPath{}, false
	}
	if c, ok := rc.GetClient().(*rest.RESTClient); !ok || c == nil || c.Client == nil {
		return restPath{}, false
	}
	res, ok := findStringField(reflect.ValueOf(lw), "resource", 4)
	if !ok || res == "" {
		return restPath{}, false
	}
	return restPath{client: rc.GetClient(), namespace: rc.GetNamespace(), resource: res}, true
}

// findStringField looks for a string field called name in the struct v
// points to and in the structs it embeds, to the given depth.
func findStringField(v reflect.Value, name string, depth int) (string, bool) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return "", false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct || depth == 0 {
		return "", false
	}
	if f := v.FieldByName(name); f.IsValid() && f.Kind() == reflect.String {
		return f.String(), true
	}
	for i := range v.NumField() {
		if v.Type().Field(i).Anonymous {
			if s, ok := findStringField(v.Field(i), name, depth-1); ok {
				return s, true
			}
		}
	}
	return "", false
}

// itemsFieldOf returns the protobuf field number of the Items of list type
// L (2 for every list of k8s.io/api), if L declares one.
func itemsFieldOf[L any]() (protowire.Number, bool) {
	t := reflect.TypeFor[L]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return 0, false
	}
	f, ok := t.FieldByName("Items")
	if !ok {
		return 0, false
	}
	tag := f.Tag.Get("protobuf")
	parts := strings.Split(tag, ",")
	if len(parts) < 2 {
		return 0, false
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n <= 0 {
		return 0, false
	}
	return protowire.Number(n), true
}

// decodingClient lists and watches through a typed client's REST client
// and decodes the responses itself, on all cores (see [Options]).
type decodingClient[E any, T ObjectPtr[E]] struct {
	path       restPath
	itemsField protowire.Number // 0: the list type has no protobuf form
	codec      *codec[E, T]
	bad        *decodeErrors
}

// request builds a GET of the resource with lo as query parameters.
func (d *decodingClient[E, T]) request(lo *metav1.ListOptions) (*rest.Request, error) {
	params, err := metav1.ParameterCodec.EncodeParameters(lo, metav1.SchemeGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("k8s: encode list options: %w", err)
	}
	req := d.path.request(d.path.namespace, "")
	for k, vs := range params {
		for _, v := range vs {
			req = req.Param(k, v)
		}
	}
	if d.codec.proto && d.itemsField != 0 {
		// As client-go's typed clients do for built-in types: protobuf,
		// unless the user's rest.Config chose a content type.
		req = req.UseProtobufAsDefault()
	}
	if lo.TimeoutSeconds != nil {
		req = req.Timeout(time.Duration(*lo.TimeoutSeconds) * time.Second)
	}
	return req, nil
}

// list reads one page and decodes its items in parallel.
func (d *decodingClient[E, T]) list(ctx context.Context, lo metav1.ListOptions) ([]T, metav1.ListInterface, error) {
	req, err := d.request(&lo)
	if err != nil {
		return nil, nil, err
	}
	var contentType string
	res := req.Do(ctx).ContentType(&contentType)
	if err := res.Error(); err != nil { // decodes the server's Status
		return nil, nil, err
	}
	body, err := res.Raw()
	if err != nil {
		return nil, nil, err
	}
	f, err := formatOf(contentType)
	if err != nil {
		return nil, nil, err
	}
	var (
		meta  metav1.ListMeta
		items [][]byte
	)
	switch f {
	case formatProto:
		raw, err := wire.Unwrap(body)
		if err != nil {
			return nil, nil, fmt.Errorf("k8s: list: %w", err)
		}
		m, its, err := wire.SplitList(raw, d.itemsField)
		if err != nil {
			return nil, nil, fmt.Errorf("k8s: list: %w", err)
		}
		if err := meta.Unmarshal(m); err != nil {
			return nil, nil, fmt.Errorf("k8s: list metadata: %w: %w", wire.ErrMalformed, err)
		}
		items = its
	default:
		if meta, items, err = wire.SplitJSONList(body); err != nil {
			return nil, nil, fmt.Errorf("k8s: list: %w", err)
		}
	}
	if lo.Continue == "" {
		d.codec.known.Begin()
	}
	objs := d.codec.decodeList(f, items, func(i int, err error) {
		d.bad.report(ctx, fmt.Errorf("k8s: list item %d of %d (%s): %w", i, len(items), f, err))
	})
	if meta.Continue == "" {
		d.codec.known.Sweep()
	}
	return objs, &meta, nil
}

// newSource returns the source of d, which decodes its responses itself.
// While it lives, it holds a lease on the sharing tables (sharing.go).
func (d *decodingClient[E, T]) newSource(opts Options) *Source[T] {
	path := d.path
	src := &Source[T]{list: d.list, watchTo: d.watchTo, decoding: true, bad: d.bad, opts: opts,
		path: &path, snapCodec: d.codec.snapshotCodec()}
	holdSharing(src, opts)
	return src
}

// watchTo opens a watch and decodes its events into sink (see
// newDecodingWatch), without the hand-off through a watch.Interface.
func (d *decodingClient[E, T]) watchTo(ctx context.Context, lo metav1.ListOptions, sink func(watch.Event) bool, finish func()) error {
	body, err := d.openWatch(ctx, lo)
	if err != nil {
		return err
	}
	newDecodingWatch(ctx, body, d.codec, d.bad, lo.SendInitialEvents != nil && *lo.SendInitialEvents, sink, finish)
	return nil
}

func (d *decodingClient[E, T]) openWatch(ctx context.Context, lo metav1.ListOptions) (io.ReadCloser, error) {
	lo.Watch = true
	if lo.SendInitialEvents != nil && *lo.SendInitialEvents {
		d.codec.known.Begin() // swept at the initial events' end marker
	}
	req, err := d.request(&lo)
	if err != nil {
		return nil, err
	}
	return req.Stream(ctx)
}

// formatOf maps a response's Content-Type onto a format the source decodes.
func formatOf(contentType string) (wireFormat, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return 0, fmt.Errorf("k8s: response content type %q: %w", contentType, err)
	}
	switch mt {
	case "application/vnd.kubernetes.protobuf":
		return formatProto, nil
	case "application/json":
		return formatJSON, nil
	}
	return 0, fmt.Errorf("k8s: response content type %q is neither protobuf nor JSON", contentType)
}
