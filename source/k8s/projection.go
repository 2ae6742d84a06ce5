package k8s

import (
	"fmt"
	"reflect"

	"github.com/ginformer/ginformer/informer"

	"github.com/ginformer/ginformer/source/k8s/internal/wire"
)

// NewProjection returns a source of P, a projection of the resource that lw
// (one of client-go's generated typed clients) serves: a struct that
// declares only the fields a controller reads, decoded straight from the
// wire without ever building the full object. Fields P does not declare
// are skipped as they are read, so a cached projection costs what its
// fields cost.
//
// P declares its fields with the tags of the type it projects, copied from
// k8s.io/api: the same `protobuf:"..."` tags (field numbers) for protobuf,
// the same `json:"..."` names for JSON; a nested struct may be a projection
// too. P must be an [Object] (embed metav1.TypeMeta and metav1.ObjectMeta
// with the metadata tag, and write DeepCopyObject), so that keys, versions,
// deletions, indexes, handlers, sharding and compat work on it as on the
// full type:
//
//	type PodSlim struct {
//		metav1.TypeMeta   `json:",inline"`
//		metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
//		Spec   struct {
//			NodeName string `json:"nodeName,omitempty" protobuf:"bytes,10,opt,name=nodeName"`
//		} `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
//		Status struct {
//			Phase corev1.PodPhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=PodPhase"`
//		} `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
//	}
//
//	src, err := k8s.NewProjection[PodSlim](clientset.CoreV1().Pods(""), k8s.Options{})
//
// L is lw's list type (inferred). Everything [New] says of a source that
// decodes itself holds: all cores, managedFields dropped unless
// [Options.KeepManagedFields], strings shared, bad objects counted.
//
// The Go types P's protobuf-tagged fields may have are those of k8s.io/api:
// string (and named string types), bool, int32, int64, uint32, uint64,
// float64, []byte; pointers to string, bool, int32, int64 and float64;
// slices of string, int32, int64, []byte and structs; maps with string
// keys; structs tagged the same way, and any type with a generated
// Unmarshal method (metav1.Time, resource.Quantity, the k8s.io/api types).
// Not int, uint, int8, int16 or float32: protobuf fixes a field's width, so
// use the width the field has in k8s.io/api (int32 or int64).
//
// Possible errors: [informer.ErrInvalidOptions] (lw is not a generated
// typed client; P has a field of a type the plan cannot decode, named in
// the error with its Go type and what to use instead; options as for
// [New]).
func NewProjection[P any, T ObjectPtr[P], L any](lw ListerWatcher[L], opts Options) (*Source[T], error) {
	if lw == nil {
		return nil, fmt.Errorf("k8s: NewProjection: nil client: %w", informer.ErrInvalidOptions)
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	path, ok := restPathOf(lw)
	if !ok {
		return nil, fmt.Errorf("k8s: NewProjection: %T is not one of client-go's generated typed clients: %w", lw, informer.ErrInvalidOptions)
	}
	c := newCodec[P, T](opts)
	if !c.proto {
		return nil, fmt.Errorf("k8s: NewProjection: %T cannot be decoded from protobuf: %s: %w",
			T(nil), wire.PlanProblem(reflect.TypeFor[P](), opts.KeepManagedFields), informer.ErrInvalidOptions)
	}
	itemsField, _ := itemsFieldOf[L]()
	bad := &decodeErrors{log: opts.Logger}
	d := &decodingClient[P, T]{path: path, itemsField: itemsField, codec: c, bad: bad}
	return d.newSource(opts), nil
}
