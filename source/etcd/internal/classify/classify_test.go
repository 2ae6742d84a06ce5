package classify_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd/internal/classify"
)

// sentinels are the informer's classes Error may add.
var sentinels = []error{informer.ErrExpired, informer.ErrVersionTooLarge, informer.ErrTransient, informer.ErrInternal}

func TestError(t *testing.T) {
	plain := errors.New("something else")
	for _, tc := range []struct {
		name string
		err  error
		want error // the class, nil for an error returned as it is
	}{
		// As the client returns them: EtcdError values ...
		{"compacted", rpctypes.ErrCompacted, informer.ErrExpired},
		{"future revision", rpctypes.ErrFutureRev, informer.ErrVersionTooLarge},
		{"no leader", rpctypes.ErrNoLeader, informer.ErrTransient},
		{"leader changed", rpctypes.ErrLeaderChanged, informer.ErrTransient},
		{"not capable", rpctypes.ErrNotCapable, informer.ErrTransient},
		{"stopped", rpctypes.ErrStopped, informer.ErrTransient},
		{"unhealthy", rpctypes.ErrUnhealthy, informer.ErrTransient},
		{"too many requests", rpctypes.ErrTooManyRequests, informer.ErrTransient},
		{"timeout", rpctypes.ErrTimeout, informer.ErrTransient},
		{"timeout, leader fail", rpctypes.ErrTimeoutDueToLeaderFail, informer.ErrTransient},
		{"timeout, connection lost", rpctypes.ErrTimeoutDueToConnectionLost, informer.ErrTransient},
		{"timeout, applied index", rpctypes.ErrTimeoutWaitAppliedIndex, informer.ErrTransient},
		// ... or the gRPC status errors they are made from.
		{"gRPC compacted", rpctypes.ErrGRPCCompacted, informer.ErrExpired},
		{"gRPC future revision", rpctypes.ErrGRPCFutureRev, informer.ErrVersionTooLarge},
		{"gRPC no leader", rpctypes.ErrGRPCNoLeader, informer.ErrTransient},
		// Other gRPC errors, by code.
		{"unavailable", status.Error(codes.Unavailable, "connection refused"), informer.ErrTransient},
		{"resource exhausted", status.Error(codes.ResourceExhausted, "quota"), informer.ErrTransient},
		{"aborted", status.Error(codes.Aborted, "aborted"), informer.ErrTransient},
		{"gRPC deadline exceeded", status.Error(codes.DeadlineExceeded, "slow"), informer.ErrTransient},
		{"internal", status.Error(codes.Internal, "oops"), informer.ErrInternal},
		{"not found", status.Error(codes.NotFound, "no such thing"), nil},
		{"permission denied", rpctypes.ErrPermissionDenied, nil},
		{"invalid argument", status.Error(codes.InvalidArgument, "bad"), nil},
		// Wrapped, by the client or by the source: classed the same.
		{"wrapped compacted", fmt.Errorf("list: %w", rpctypes.ErrCompacted), informer.ErrExpired},
		{"wrapped gRPC compacted", fmt.Errorf("list: %w", rpctypes.ErrGRPCCompacted), informer.ErrExpired},
		{"wrapped gRPC future revision", fmt.Errorf("watch: %w", rpctypes.ErrGRPCFutureRev), informer.ErrVersionTooLarge},
		{"wrapped gRPC no leader", fmt.Errorf("get: %w", rpctypes.ErrGRPCNoLeader), informer.ErrTransient},
		{"twice wrapped gRPC no leader", fmt.Errorf("list: %w", fmt.Errorf("get: %w", rpctypes.ErrGRPCNoLeader)), informer.ErrTransient},
		{"wrapped unavailable", fmt.Errorf("watch: %w", status.Error(codes.Unavailable, "connection refused")), informer.ErrTransient},
		{"wrapped internal", fmt.Errorf("get: %w", status.Error(codes.Internal, "oops")), informer.ErrInternal},
		{"wrapped not found", fmt.Errorf("get: %w", status.Error(codes.NotFound, "no such thing")), nil},
		{"joined unavailable", errors.Join(plain, status.Error(codes.Unavailable, "connection refused")), informer.ErrTransient},
		// Context errors, even wrapped, and unknown errors stay as they are.
		{"canceled", context.Canceled, nil},
		{"deadline exceeded", fmt.Errorf("get: %w", context.DeadlineExceeded), nil},
		{"unknown", plain, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := classify.Error(tc.err)
			if !errors.Is(got, tc.err) {
				t.Fatalf("Error(%v) = %v, which does not wrap the original", tc.err, got)
			}
			for _, s := range sentinels {
				if is, want := errors.Is(got, s), s == tc.want; is != want {
					t.Errorf("Error(%v) = %v: errors.Is(%v) = %v, want %v", tc.err, got, s, is, want)
				}
			}
			if tc.want == nil && got != tc.err {
				t.Errorf("Error(%v) = %v, want the error itself", tc.err, got)
			}
		})
	}
}

func TestErrorNil(t *testing.T) {
	if err := classify.Error(nil); err != nil {
		t.Fatalf("Error(nil) = %v, want nil", err)
	}
}
