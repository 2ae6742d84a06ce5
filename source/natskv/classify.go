package natskv

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/internal/sourcekit"
)

// transientErrs are the NATS client's errors that pass by themselves: the
// connection's state, a request that timed out or found no responder, and
// JetStream unavailable or missing heartbeats.
var transientErrs = []error{
	nats.ErrConnectionClosed, nats.ErrConnectionDraining, nats.ErrConnectionReconnecting, nats.ErrDisconnected, nats.ErrNoServers,
	nats.ErrTimeout, nats.ErrNoResponders, context.DeadlineExceeded,
	jetstream.ErrNoHeartbeat, jetstream.ErrJetStreamNotEnabled, jetstream.ErrServerShutdown,
}

// classify wraps an error of the NATS client for the reflector: the
// failures that pass by themselves (connection lost or closed, timeouts, no
// responders, JetStream unavailable, missed heartbeats) wrap
// [informer.ErrTransient]; the context's own end is returned as it is; any
// other error (a missing bucket, a refused request) is wrapped unclassified.
// A ctx ended by a lost connection (see bindConn) gives ErrTransient too.
func classify(ctx context.Context, what string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		if lost := connLost(ctx); lost != nil {
			return fmt.Errorf("natskv source: %s: %w: %w", what, informer.ErrTransient, lost)
		}
		return ctxErr
	}
	if sourcekit.IsAny(err, transientErrs...) {
		return fmt.Errorf("natskv source: %s: %w: %w", what, informer.ErrTransient, err)
	}
	return fmt.Errorf("natskv source: %s: %w", what, err)
}
