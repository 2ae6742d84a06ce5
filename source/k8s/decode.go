package k8s

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"

	"github.com/go-logr/logr"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/internal/lograte"
	"github.com/ginformer/ginformer/internal/parallel"

	"github.com/ginformer/ginformer/source/k8s/internal/wire"
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
	// shareStrings shares repeated strings between objects.
	shareStrings bool
	// known, if not nil, remembers the objects delivered, so that a relist
	// decodes only what changed (wire.Known).
	known *wire.Known[E]
	// plan, if not nil, decodes protobuf without the generated Unmarshal
	// (wire.Plan): managedFields skipped, strings and spec subtrees shared
	// as they are read.
	plan *wire.Plan[E]
	// jsonPlan, if not nil, decodes JSON (custom resources, or a client
	// that asks for JSON) without sigs.k8s.io/json (wire.JSONPlan), to the
	// same result: managedFields skipped, strings shared as they are read.
	jsonPlan *wire.JSONPlan[E]
}

func newCodec[E any, T ObjectPtr[E]](opts Options) *codec[E, T] {
	_, generated := any(T(new(E))).(protoUnmarshaler)
	c := &codec[E, T]{proto: generated, keepManaged: opts.KeepManagedFields, known: wire.NewKnown[E]()}
	c.shareStrings = !opts.DisableStringSharing
	po := wire.PlanOptions{KeepManagedFields: opts.KeepManagedFields, ShareStrings: c.shareStrings, ShareSubtrees: !opts.DisableSubtreeSharing}
	switch {
	case generated && (po.ShareStrings || po.ShareSubtrees):
		// Without sharing the generated Unmarshal is faster than the plan.
		c.plan = wire.NewPlan[E](po)
	case !generated:
		// A projection: a type tagged like the generated ones, decoded by
		// its plan alone.
		c.plan = wire.NewPlan[E](po)
		c.proto = c.plan != nil
	}
	c.jsonPlan = wire.NewJSONPlan[E](po)
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
			err := c.plan.Decode(raw, into)
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
			if b, err = wire.WithoutManagedFields(raw, scratch); err != nil {
				return err
			}
		}
		if err := any(into).(protoUnmarshaler).Unmarshal(b); err != nil {
			return err
		}
	default:
		if c.jsonPlan != nil {
			err := c.jsonPlan.Decode(raw, into)
			if err == nil {
				// As client-go's typed decoders: a typed object's kind is
				// its Go type, not a field.
				into.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
				if !c.keepManaged {
					into.SetManagedFields(nil) // a type whose metadata the plan does not find
				}
				return nil
			}
			// Decode the object again with sigs.k8s.io/json, whose error
			// is the one reported (the plan stops at the first problem,
			// and its errors say less).
			var zero E
			*into = zero
		}
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
	// The plans share strings as they decode; the generated Unmarshal and
	// sigs.k8s.io/json do not, so their strings are shared afterwards.
	if c.shareStrings {
		wire.ShareStrings(into)
	}
	return nil
}

// decodeMeta decodes only the metadata of raw into into: what a deletion
// needs when the whole object does not decode.
func (c *codec[E, T]) decodeMeta(f wireFormat, raw []byte, into T) error {
	m, err := objectMeta(f, raw)
	if err != nil {
		return err
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

// objectMeta decodes the metadata of raw alone (in protobuf, the leading
// metadata field, which decodes even when what follows it is damaged).
func objectMeta(f wireFormat, raw []byte) (metav1.ObjectMeta, error) {
	var m metav1.ObjectMeta
	switch f {
	case formatProto:
		b, err := wire.Meta(raw)
		if err != nil {
			return m, err
		}
		if err := m.Unmarshal(b); err != nil {
			return m, err
		}
	default:
		var o struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &o); err != nil {
			return m, err
		}
		m = o.Metadata
	}
	if m.Name == "" {
		return m, fmt.Errorf("k8s: object without a name")
	}
	return m, nil
}

// decodeFailure returns the [DecodeError] of raw, which failed to decode
// with err: named by its metadata when that decodes.
func decodeFailure(f wireFormat, raw []byte, err error) *DecodeError {
	e := &DecodeError{Err: err}
	if m, merr := objectMeta(f, raw); merr == nil {
		e.Namespace, e.Name, e.ResourceVersion = m.Namespace, m.Name, m.ResourceVersion
	}
	return e
}

// decodeList decodes items on up to GOMAXPROCS goroutines and returns the
// objects in the items' order. A protobuf item whose name and
// resourceVersion the source already delivered (c.known) is not decoded:
// the delivered object is returned again. So is a JSON item, when the JSON
// plan decodes the type (its identity is read by a scan, wire.JSONIdentity). The others are decoded into one
// backing array and recorded as known. Items that fail to decode are left
// out and passed to bad as a [*DecodeError] (from the calling goroutine,
// after decoding).
func (c *codec[E, T]) decodeList(f wireFormat, items [][]byte, bad func(i int, err error)) []T {
	out := make([]T, len(items))
	var misses []int
	if c.skipsKnown(f) {
		hit := make([]bool, len(items))
		forEachItem(len(items), func(i int, scratch *[]byte) {
			if key, version, ok := c.identity(f, items[i], *scratch); ok {
				*scratch = key
				o, ok := c.known.Lookup(key, version)
				out[i], hit[i] = T(o), ok
			}
		})
		for i, h := range hit {
			if !h {
				misses = append(misses, i)
			}
		}
	} else {
		misses = make([]int, len(items))
		for i := range misses {
			misses[i] = i
		}
	}
	objs := make([]E, len(misses))
	at := wire.AnchorOf(objs)
	errs := make([]error, len(misses))
	forEachItem(len(misses), func(j int, scratch *[]byte) {
		o := T(&objs[j])
		if errs[j] = c.decode(f, items[misses[j]], o, scratch); errs[j] == nil {
			out[misses[j]] = o
			if c.known != nil {
				c.known.Record(o.GetNamespace(), o.GetName(), o.GetResourceVersion(), at, j)
			}
		}
	})
	for j, err := range errs {
		if err != nil && bad != nil {
			bad(misses[j], decodeFailure(f, items[misses[j]], err))
		}
	}
	if len(errs) > 0 && slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
		out = slices.DeleteFunc(out, func(o T) bool { return o == nil })
	}
	return out
}

// skipsKnown reports whether objects of format f that the source already
// delivered are recognised without decoding them (see decodeList): for
// protobuf, and for JSON decoded by the JSON plan.
func (c *codec[E, T]) skipsKnown(f wireFormat) bool {
	return c.known != nil && (f == formatProto || c.jsonPlan != nil)
}

// identity reads the "namespace/name" (into buf) and resourceVersion of
// raw, an object of format f, without decoding it.
func (c *codec[E, T]) identity(f wireFormat, raw, buf []byte) (key, version []byte, ok bool) {
	if f == formatProto {
		return wire.Identity(raw, buf)
	}
	return wire.JSONIdentity(raw, buf)
}

// forEachItem calls fn for 0..n-1 in chunks of 16 on up to GOMAXPROCS
// goroutines, the caller's among them ([parallel.Chunks]); each goroutine
// has a scratch buffer of its own.
func forEachItem(n int, fn func(i int, scratch *[]byte)) {
	scratch := make([][]byte, runtime.GOMAXPROCS(0))
	_ = parallel.Chunks(n, 16, len(scratch), func(w, lo, hi int) error {
		for i := lo; i < hi; i++ {
			fn(i, &scratch[w])
		}
		return nil
	})
}

// decodeErrors counts and reports the objects a source could not decode.
type decodeErrors struct {
	n       atomic.Uint64
	log     logr.Logger
	limiter lograte.Limiter
}

// report counts err and reports it, marked with [informer.ErrDecode] (a
// [*DecodeError] is), to the informer listing or watching the source (ctx
// is the List or Watch call's: [informer.ReportSourceError]), which logs
// it; without one it logs it itself, within the rate limit.
func (d *decodeErrors) report(ctx context.Context, err error) {
	d.n.Add(1)
	if !errors.Is(err, informer.ErrDecode) {
		err = fmt.Errorf("%w: %w", informer.ErrDecode, err)
	}
	if !informer.ReportSourceError(ctx, err) {
		d.limiter.Error(d.log, "decode", err, "k8s: an object from the server does not decode")
	}
}

// DecodeError is what a source that decodes itself ([Source.Decoding])
// reports for an object from the server that does not decode into its
// type: to the informer listing or watching it
// ([informer.ReportSourceError]: class decode in its metrics, its Health,
// ErrorHandler and log), or to [Options.Logger] when no informer listens;
// [Source.DecodeErrors] counts them. It is usually wrapped with where the
// object came from (a list item, a watch event) and what the source did
// with it; errors.As finds it.
//
// What the source does with such an object is one policy, the same as the
// etcd and NATS KV sources' (docs/k8s.md, "Objects that do not decode"):
// the object is treated as absent. A list (or a streaming list's initial
// events) leaves it out, so the list removes the key from the cache; a
// watch event (ADDED, MODIFIED, DELETED) is delivered as a deletion of
// the key, with the object's metadata alone, at the event's
// resourceVersion. The cache never serves a state it knows is outdated,
// and no deletion is lost. A watch event whose object does not decode even
// its metadata, which cannot be named, ends the watch with an
// [informer.ErrInternal] error instead.
type DecodeError struct {
	// Namespace and Name name the object; both "" when not even its
	// metadata decodes.
	Namespace, Name string
	// ResourceVersion is the version of the object that does not decode
	// ("" when its metadata does not decode).
	ResourceVersion string
	// Err is the decoder's error.
	Err error
}

// Error names the object, its version and the cause.
func (e *DecodeError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("an object whose metadata does not decode: %v", e.Err)
	}
	return fmt.Sprintf("%s/%s at resourceVersion %s does not decode: %v", e.Namespace, e.Name, e.ResourceVersion, e.Err)
}

// Unwrap returns the cause and [informer.ErrDecode].
func (e *DecodeError) Unwrap() []error { return []error{e.Err, informer.ErrDecode} }
