package k8s_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	// A bare 410 Gone, as older servers send for an expired version (what
	// the deprecated apierrors.NewGone builds).
	gone := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonGone, Message: "gone",
	}}
	tooLarge := apierrors.NewTimeoutError("Too large resource version: 99, current: 5", 1)
	tooLarge.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	tests := []struct {
		name string
		err  error
		want error // nil: no sentinel
	}{
		{"410 expired", apierrors.NewResourceExpired("too old resource version: 1 (5)"), informer.ErrExpired},
		{"410 gone", gone, informer.ErrExpired},
		{"too large", tooLarge, informer.ErrVersionTooLarge},
		{"429", apierrors.NewTooManyRequests("slow down", 1), informer.ErrTransient},
		{"503", apierrors.NewServiceUnavailable("later"), informer.ErrTransient},
		{"connection refused", fmt.Errorf("Get https://x: %w", refused), informer.ErrTransient},
		{"500", apierrors.NewInternalError(errors.New("boom")), informer.ErrInternal},
		{"403", apierrors.NewForbidden(gr, "x", errors.New("no")), nil},
		{"404", apierrors.NewNotFound(gr, "x"), nil},
		{"400 bad token", apierrors.NewBadRequest("continue key is not valid"), informer.ErrInvalidOptions},
	}
	sentinels := []error{informer.ErrExpired, informer.ErrVersionTooLarge, informer.ErrTransient, informer.ErrInternal, informer.ErrInvalidOptions}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := k8s.Classify("op", tt.err)
			require.ErrorIs(t, got, tt.err, "the original error stays in the chain")
			for _, s := range sentinels {
				require.Equal(t, s == tt.want, errors.Is(got, s), "%v", s)
			}
		})
	}
	require.NoError(t, k8s.Classify("op", nil))
}

func TestOptionsValidation(t *testing.T) {
	cms := fake.NewClientset().CoreV1().ConfigMaps("x")
	for _, o := range []k8s.Options{{LabelSelector: "a in (b"}, {FieldSelector: "nooperator"}} {
		_, err := k8s.New(cms, cmItems, o)
		require.ErrorIs(t, err, informer.ErrInvalidOptions, "%+v", o)
	}
	_, err := k8s.New(cms, cmItems, k8s.Options{LabelSelector: "app=web", FieldSelector: "metadata.name=x"})
	require.NoError(t, err)
	_, err = k8s.NewDynamic(nil, k8s.Options{})
	require.ErrorIs(t, err, informer.ErrInvalidOptions)
	_, err = k8s.NewMetadata(nil, k8s.Options{})
	require.ErrorIs(t, err, informer.ErrInvalidOptions)
}
