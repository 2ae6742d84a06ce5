package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/internal/typename"
)

var (
	_ informer.SnapshotSource[*unstructured.Unstructured]    = (*Source[*unstructured.Unstructured])(nil)
	_ informer.SnapshotSource[*metav1.PartialObjectMetadata] = (*Sharded[*metav1.PartialObjectMetadata])(nil)
)

// SnapshotIdentity implements [informer.SnapshotSource]: what a snapshot
// of this source's cache must match to be restored into an informer of it.
// It names, one per line:
//
//   - the resource: the address the client's requests go to (scheme,
//     host, path prefix, group, version, namespace or none, resource), for
//     client-go's typed, dynamic and metadata clients and sources made by
//     [NewForConfig] and [NewProjection]; for any other client (a fake, a
//     wrapper, [NewFromListerWatcher]) only the client's Go type, which does
//     not tell resources or namespaces apart: set
//     [informer.SnapshotOptions.Identity] to name them;
//   - the cluster: the uid of its kube-system namespace, read with a GET
//     (one request per informer run); "unknown" with the reason when the
//     credentials may not read it (403, 401) or it does not exist. Only
//     with the resource: a source that cannot address its resource cannot
//     ask the cluster either, so [informer.SnapshotOptions.Identity] names
//     the cluster too;
//   - the object type, the label and field selectors (normalized), and
//     whether managedFields are kept.
//
// A cluster recreated at the same address has a new kube-system uid, so
// its snapshots are refused. Where the uid cannot be read, such a
// snapshot's resourceVersion belongs to another etcd: a watch from it
// fails (expired, or too large) and the informer relists, unless the new
// etcd's history happens to hold that revision, in which case the restored
// objects the new cluster lacks would linger until a relist. The source's
// Options that do not change what is cached (string sharing, decoding,
// buffers) are not part of it.
//
// Possible errors: the GET's, other than 401, 403 and 404 (the cluster
// cannot be told; the informer then starts cold).
func (s *Source[T]) SnapshotIdentity(ctx context.Context) (string, error) {
	var b strings.Builder
	b.WriteString("k8s\n")
	if s.path != nil {
		cluster, err := s.path.clusterID(ctx)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "resource: %s\ncluster: %s\n", s.path.url(), cluster)
	} else {
		fmt.Fprintf(&b, "client: %s\n", s.client)
	}
	fmt.Fprintf(&b, "object: %s\n", typename.Of(reflect.TypeFor[T]()))
	// Options.validate parsed both.
	ls, _ := labels.Parse(s.opts.LabelSelector)
	fs, _ := fields.ParseSelector(s.opts.FieldSelector)
	fmt.Fprintf(&b, "labelSelector: %q\nfieldSelector: %q\n", ls.String(), fs.String())
	if s.opts.KeepManagedFields {
		b.WriteString("managedFields: kept")
	} else {
		b.WriteString("managedFields: dropped")
	}
	return b.String(), nil
}

// SnapshotCodec implements [informer.SnapshotSource]: protobuf for the
// generated types of k8s.io/api read through client-go's typed clients (and
// [NewForConfig] of such a type), JSON for every other object, each decoded
// as the source decodes the wire. Decoding an object of a source that
// decodes itself ([Source.Decoding]) also records it as delivered, so that
// a relist after a restart (a 410 Gone) decodes only what changed while
// the program was down.
//
// A source made by [NewFromListerWatcher], whose objects are of no one
// type, keeps each object with its kind: typed objects by their kind in
// client-go's scheme (k8s.io/client-go/kubernetes/scheme.Scheme), in
// protobuf where the type has the generated marshaller and JSON otherwise,
// and decoded into scheme.New of that kind; *unstructured.Unstructured and
// *metav1.PartialObjectMetadata in JSON, with their own apiVersion and
// kind. An object of a type the scheme does not know (a custom resource's
// Go type registered only in another scheme) fails to encode: the informer
// reports each snapshot write that fails and goes on. Register such types
// in client-go's scheme (their AddToScheme), or leave snapshots off. Such a
// source's [Source.SnapshotIdentity] cannot name the resource: set
// [informer.SnapshotOptions.Identity].
func (s *Source[T]) SnapshotCodec() informer.Codec[T] { return s.snapCodec }

// SnapshotIdentity implements [informer.SnapshotSource]: the identity of
// the unsharded source ([Source.SnapshotIdentity]) and the field that
// places objects, not the slice: a slice changes from one run to the next,
// and an informer restored from a snapshot relists its slice first (see
// [Sharded.Watch]), handing on only what differs from the restored cache.
//
// Possible errors: those of [Source.SnapshotIdentity].
func (s *Sharded[T]) SnapshotIdentity(ctx context.Context) (string, error) {
	id, err := s.src.SnapshotIdentity(ctx)
	if err != nil {
		return "", err
	}
	return id + "\nsharded by: " + s.field, nil
}

// SnapshotCodec implements [informer.SnapshotSource]: the unsharded
// source's ([Source.SnapshotCodec]).
func (s *Sharded[T]) SnapshotCodec() informer.Codec[T] { return s.src.SnapshotCodec() }

// clusterID names the cluster p's server belongs to: the uid of its
// kube-system namespace, or "unknown (reason)" when it may not be read.
//
// Possible errors: those of the GET other than 401, 403 and 404.
func (p restPath) clusterID(ctx context.Context) (string, error) {
	raw, err := p.client.Get().AbsPath("/api/v1/namespaces", metav1.NamespaceSystem).
		SetHeader("Accept", "application/json").Do(ctx).Raw()
	switch {
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err), apierrors.IsNotFound(err):
		return fmt.Sprintf("unknown (namespace %s: %s)", metav1.NamespaceSystem, apierrors.ReasonForError(err)), nil
	case err != nil:
		return "", fmt.Errorf("k8s: snapshot identity: read namespace %s: %w", metav1.NamespaceSystem, classify("get", err))
	}
	var ns struct {
		Metadata struct {
			UID string `json:"uid"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &ns); err != nil || ns.Metadata.UID == "" {
		return "", fmt.Errorf("k8s: snapshot identity: namespace %s: no uid in the answer (%v)", metav1.NamespaceSystem, err)
	}
	return metav1.NamespaceSystem + " namespace uid " + ns.Metadata.UID, nil
}
