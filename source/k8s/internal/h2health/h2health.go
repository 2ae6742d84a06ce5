// Package h2health tells how long client-go's transport takes to find a
// dead connection: the HTTP/2 health check that k8s.io/apimachinery's
// SetTransportDefaults turns on for the transports client-go builds from a
// rest.Config. It imports nothing of ginformer.
package h2health

import (
	"net/http"
	"os"
	"strconv"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// The defaults of k8s.io/apimachinery/pkg/util/net (configureHTTP2Transport),
// and golang.org/x/net/http2's when PingTimeout is 0.
const (
	defaultReadIdle = 30 * time.Second
	defaultPing     = 15 * time.Second
)

// Bound returns how long a connection of rt that hears nothing can stay
// open before the transport closes it (failing the requests on it, a
// watch's included): ReadIdleTimeout, after which it pings the server,
// plus PingTimeout, within which the answer must come. That is 30 s + 15 s
// by default, or what HTTP2_READ_IDLE_TIMEOUT_SECONDS and
// HTTP2_PING_TIMEOUT_SECONDS say, read as client-go reads them.
//
// Bound unwraps rt through the round trippers that say what they wrap
// (client-go's: authentication, user agent, impersonation, the transport
// cache) down to an *http.Transport, and gives 0 (no bound known) when it
// finds none (a fake, a wrapper of the program's own), when it is
// http.DefaultTransport (which client-go uses for a rest.Config with no TLS
// settings: no health check), when it does not speak HTTP/2 (plain http,
// DISABLE_HTTP2, TLS NextProtos without h2), and when the health check is
// off (HTTP2_READ_IDLE_TIMEOUT_SECONDS=0). It cannot read the timeouts of
// an HTTP/2 transport: one the program configured itself (rest.Config's
// Transport) is taken to have client-go's.
func Bound(rt http.RoundTripper) time.Duration {
	for rt != nil {
		w, ok := rt.(utilnet.RoundTripperWrapper)
		if !ok {
			break
		}
		rt = w.WrappedRoundTripper()
	}
	// x/net/http2's ConfigureTransports marks the transport it configures
	// by TLSNextProto["h2"] before Go 1.27 and by Protocols from Go 1.27 on
	// (x/net v0.62, transport_wrap.go); a program may set HTTP2 itself.
	t, ok := rt.(*http.Transport)
	if !ok || t == http.DefaultTransport || !(t.TLSNextProto["h2"] != nil || t.HTTP2 != nil || t.Protocols != nil && t.Protocols.HTTP2()) || os.Getenv("DISABLE_HTTP2") != "" {
		return 0
	}
	readIdle := seconds("HTTP2_READ_IDLE_TIMEOUT_SECONDS", defaultReadIdle)
	if readIdle <= 0 {
		return 0
	}
	ping := seconds("HTTP2_PING_TIMEOUT_SECONDS", defaultPing)
	if ping <= 0 {
		ping = defaultPing
	}
	return readIdle + ping
}

// seconds reads a whole number of seconds from the environment variable
// name, def when it is unset or not a number (client-go then warns and
// uses its default too).
func seconds(name string, def time.Duration) time.Duration {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return time.Duration(n) * time.Second
}
