package natskv

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ginformer/ginformer/informer"
)

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
	switch {
	case errors.Is(err, nats.ErrConnectionClosed),
		errors.Is(err, nats.ErrConnectionDraining),
		errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, nats.ErrDisconnected),
		errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, nats.ErrNoServers),
		errors.Is(err, jetstream.ErrNoHeartbeat),
		errors.Is(err, jetstream.ErrJetStreamNotEnabled),
		errors.Is(err, jetstream.ErrServerShutdown),
		errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("natskv source: %s: %w: %w", what, informer.ErrTransient, err)
	}
	return fmt.Errorf("natskv source: %s: %w", what, err)
}
