package k8s

import (
	"time"

	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s/internal/h2health"
)

var _ informer.LivenessBounder = (*Source[Object])(nil)

// LivenessBound returns how long a dead watch of the source can go
// unnoticed (see [informer.LivenessBounder]): the HTTP/2 health check of
// the transport client-go built for the source's client, 45 s by default
// (after ReadIdleTimeout, 30 s without a frame, the transport pings the
// apiserver; PingTimeout, 15 s, later it closes the connection), or what
// HTTP2_READ_IDLE_TIMEOUT_SECONDS and HTTP2_PING_TIMEOUT_SECONDS say. The
// watch on a closed connection ends with an Error event: the source's own
// decoder and client-go's both report a lost connection as one.
//
// It is 0 when nothing the source can see bounds it: a client whose REST
// client it cannot reach ([NewFromListerWatcher], a fake, a wrapper); a
// rest.Config with no TLS settings (client-go then uses
// http.DefaultTransport, which has no health check) or with a Transport
// of the program's own that does not say what it wraps; HTTP/1.1 (plain
// http, DISABLE_HTTP2); the health check off. The watch's own timeout (the
// reflector's, 5 to 10 minutes) is no bound: the source is not told it
// beforehand, and on an HTTP/2 connection without a health check a watch
// that times out ends like a normal one, and the next waits on the same
// dead connection. An HTTP/2 Transport of the program's own is taken to
// have client-go's timeouts.
func (s *Source[T]) LivenessBound() time.Duration {
	if s.path == nil {
		return 0
	}
	rc, ok := s.path.client.(*rest.RESTClient)
	if !ok || rc.Client == nil {
		return 0
	}
	return h2health.Bound(rc.Client.Transport)
}
