// Package classify classes the errors of the etcd client by the informer's
// sentinels, for the etcd source and its lease membership (package lease),
// which may not import each other's internals.
package classify

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/internal/sourcekit"
)

// transientErrs are the etcd errors that pass by themselves: no leader or a
// leader change, a member stopped, unhealthy or overloaded, and the
// timeouts.
var transientErrs = []error{
	rpctypes.ErrNoLeader, rpctypes.ErrLeaderChanged, rpctypes.ErrNotCapable, rpctypes.ErrStopped,
	rpctypes.ErrUnhealthy, rpctypes.ErrTooManyRequests,
	rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail, rpctypes.ErrTimeoutDueToConnectionLost, rpctypes.ErrTimeoutWaitAppliedIndex,
}

// grpcStatus is implemented by gRPC's status errors.
type grpcStatus interface{ GRPCStatus() *status.Status }

// Error wraps an etcd client error with the informer sentinel for its
// class (see informer/source.go), keeping the original in the chain. A
// gRPC status error is classed the same whether it is err itself or
// wrapped in it (fmt.Errorf with %w): by the first status error in err's
// chain. Context errors and unknown errors are returned as they are.
func Error(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	// rpctypes.Error matches a status error by its message, which for a
	// wrapped one status.FromError gives as the whole chain's: unwrap it
	// first.
	cause := err
	var se grpcStatus
	if errors.As(err, &se) {
		cause = se.GRPCStatus().Err()
	}
	ev := rpctypes.Error(cause)
	switch {
	case errors.Is(ev, rpctypes.ErrCompacted):
		return fmt.Errorf("%w: %w", informer.ErrExpired, err)
	case errors.Is(ev, rpctypes.ErrFutureRev):
		return fmt.Errorf("%w: %w", informer.ErrVersionTooLarge, err)
	case sourcekit.IsAny(ev, transientErrs...):
		return fmt.Errorf("%w: %w", informer.ErrTransient, err)
	}
	if s, ok := status.FromError(cause); ok {
		switch s.Code() {
		case codes.Unavailable, codes.ResourceExhausted, codes.Aborted, codes.DeadlineExceeded:
			return fmt.Errorf("%w: %w", informer.ErrTransient, err)
		case codes.Internal:
			return fmt.Errorf("%w: %w", informer.ErrInternal, err)
		}
	}
	return err
}
