package consistency

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ginformer/ginformer/source/k8s"
)

// Apply applies ac (server-side apply) through w's client and records the
// version the server returned, as [Writer.Update] does. AC is the client's
// apply configuration type (*applyconfigurationscorev1.ConfigMapApplyConfiguration
// for ConfigMaps), inferred from ac; a generic function rather than a
// method because a method cannot have type parameters:
//
//	cm, err := consistency.Apply(w, ctx, corev1ac.ConfigMap(name, ns).WithData(data), metav1.ApplyOptions{FieldManager: "ctrl"})
//
// Possible errors: the client's; errors.ErrUnsupported (wrapped) when w's
// client has no Apply for AC.
func Apply[C, T k8s.Object, AC any](w *Writer[C, T], ctx context.Context, ac AC, opts metav1.ApplyOptions) (C, error) {
	a, ok := w.client.(interface {
		Apply(ctx context.Context, ac AC, opts metav1.ApplyOptions) (C, error)
	})
	if !ok {
		var zero C
		return zero, fmt.Errorf("consistency: %T has no Apply of %T: %w", w.client, ac, errors.ErrUnsupported)
	}
	out, err := a.Apply(ctx, ac, opts)
	if err == nil {
		w.wrote(out)
	}
	return out, err
}

// ApplyStatus is [Apply] for the status subresource.
//
// Possible errors: the client's; errors.ErrUnsupported (wrapped) when w's
// client has no ApplyStatus for AC.
func ApplyStatus[C, T k8s.Object, AC any](w *Writer[C, T], ctx context.Context, ac AC, opts metav1.ApplyOptions) (C, error) {
	a, ok := w.client.(interface {
		ApplyStatus(ctx context.Context, ac AC, opts metav1.ApplyOptions) (C, error)
	})
	if !ok {
		var zero C
		return zero, fmt.Errorf("consistency: %T has no ApplyStatus of %T: %w", w.client, ac, errors.ErrUnsupported)
	}
	out, err := a.ApplyStatus(ctx, ac, opts)
	if err == nil {
		w.wrote(out)
	}
	return out, err
}
