package k8s

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"

	"github.com/go-logr/logr"

	"github.com/ginformer/ginformer/internal/lograte"
)

// wireFormat is the encoding of a response body.
type wireFormat uint8

const (
	formatJSON wireFormat = iota
	formatProto
)

func (f wireFormat) String() string {
	if f == formatProto {
		return "protobuf"
	}
	return "json"
}

// protoUnmarshaler is what the generated types of k8s.io/api implement.
type protoUnmarshaler interface{ Unmarshal([]byte) error }

// codec decodes the raw bytes of one object into a T the source then owns.
// It is safe for concurrent use.
type codec[E any, T ObjectPtr[E]] struct {
	// proto is whether T decodes protobuf (a generated k8s.io/api type).
	proto bool
	// keepManaged keeps metadata.managedFields.
	keepManaged bool
	// strings, if not nil, shares repeated strings between objects.
	strings *interner
	// plan, if not nil, decodes protobuf without the generated Unmarshal
	// (pbplan.go): managedFields skipped, strings and spec subtrees shared
	// as they are read.
	plan *pbPlan
}

func newCodec[E any, T ObjectPtr[E]](opts Options) *codec[E, T] {
	_, generated := any(T(new(E))).(protoUnmarshaler)
	c := &codec[E, T]{proto: generated, keepManaged: opts.KeepManagedFields}
	if !opts.DisableStringSharing {
		c.strings = newInterner()
	}
	switch {
	case generated && !opts.DisableStringSharing:
		// Without sharing the generated Unmarshal is faster than the plan.
		c.plan = planFor(reflect.TypeFor[E](), opts.KeepManagedFields, true)
	case !generated:
		// A projection: a type tagged like the generated ones, decoded by
		// its plan alone.
		c.plan = planFor(reflect.TypeFor[E](), opts.KeepManagedFields, !opts.DisableStringSharing)
		c.proto = c.plan != nil
	}
	return c
}

// decode decodes raw (an object's own bytes, without envelope) into into,
// which must be zero. scratch is the calling goroutine's buffer.
func (c *codec[E, T]) decode(f wireFormat, raw []byte, into T, scratch *[]byte) error {
	switch f {
	case formatProto:
		if !c.proto {
			return fmt.Errorf("k8s: the server sent protobuf for %T, which does not decode it", into)
		}
		if c.plan != nil {
			err := pbDecode(raw, unsafe.Pointer(into), c.plan)
			if err == nil {
				return nil
			}
			if _, ok := any(into).(protoUnmarshaler); !ok {
				return err
			}
			// Decode the object again with its generated Unmarshal, which
			// reports what is wrong with it, or copes with what the plan
			// does not (a shared field repeated).
			var zero E
			*into = zero
		}
		b := raw
		if !c.keepManaged {
			var err error
			if b, err = withoutManagedFields(raw, scratch); err != nil {
				return err
			}
		}
		if err := any(into).(protoUnmarshaler).Unmarshal(b); err != nil {
			return err
		}
	default:
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, into); err != nil {
			return err
		}
		// As client-go's typed decoders: a typed object's kind is its Go
		// type, not a field.
		into.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		if !c.keepManaged {
			into.SetManagedFields(nil)
		}
	}
	// The plan shares strings as it decodes; the generated Unmarshal and
	// JSON do not, so their strings are shared afterwards.
	if c.strings != nil {
		c.strings.object(into)
	}
	return nil
}

// decodeMeta decodes only the metadata of raw into into: what a deletion
// needs when the whole object does not decode.
func (c *codec[E, T]) decodeMeta(f wireFormat, raw []byte, into T) error {
	var m metav1.ObjectMeta
	switch f {
	case formatProto:
		b, err := leadingBytesField(raw, objectMetaField)
		if err != nil {
			return err
		}
		if err := m.Unmarshal(b); err != nil {
			return err
		}
	default:
		var o struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &o); err != nil {
			return err
		}
		m = o.Metadata
	}
	if m.Name == "" {
		return fmt.Errorf("k8s: object without a name")
	}
	into.SetName(m.Name)
	into.SetNamespace(m.Namespace)
	into.SetUID(m.UID)
	into.SetResourceVersion(m.ResourceVersion)
	into.SetLabels(m.Labels)
	into.SetAnnotations(m.Annotations)
	into.SetOwnerReferences(m.OwnerReferences)
	return nil
}

// decodeList decodes items into one backing array, on up to GOMAXPROCS
// goroutines, and returns pointers to the objects in the items' order.
// Items that fail to decode are left out and passed to bad (from the
// calling goroutine, after decoding).
func (c *codec[E, T]) decodeList(f wireFormat, items [][]byte, bad func(i int, err error)) []T {
	objs := make([]E, len(items))
	errs := make([]error, len(items))
	const chunk = 16
	var next atomic.Int64
	work := func() {
		var scratch []byte
		for {
			lo := int(next.Add(chunk)) - chunk
			if lo >= len(items) {
				return
			}
			for i := lo; i < min(lo+chunk, len(items)); i++ {
				errs[i] = c.decode(f, items[i], T(&objs[i]), &scratch)
			}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), (len(items)+chunk-1)/chunk)
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	out := make([]T, 0, len(items))
	for i := range objs {
		if errs[i] != nil {
			bad(i, errs[i])
			continue
		}
		out = append(out, T(&objs[i]))
	}
	return out
}

// decodeErrors counts and logs the objects a source could not decode.
type decodeErrors struct {
	n       atomic.Uint64
	log     logr.Logger
	limiter lograte.Limiter
}

// report counts err and logs it, within the rate limit.
func (d *decodeErrors) report(_ context.Context, err error) {
	d.n.Add(1)
	d.limiter.Error(d.log, "decode", err, "k8s: an object from the server does not decode")
}
