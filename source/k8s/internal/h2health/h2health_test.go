package h2health_test

import (
	"crypto/tls"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/source/k8s/internal/h2health"
)

// roundTripper is a transport of the program's own.
type roundTripper struct{}

func (roundTripper) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, http.ErrNotSupported
}

// The bound of the transports client-go builds from a rest.Config, with
// its authentication and user-agent wrappers around them.
func TestBound(t *testing.T) {
	tlsConfig := func(mod func(*rest.Config)) *rest.Config {
		cfg := &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "t", UserAgent: "test",
			TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
		if mod != nil {
			mod(cfg)
		}
		return cfg
	}
	for _, tc := range []struct {
		name string
		cfg  *rest.Config
		env  map[string]string
		want time.Duration
	}{
		{"TLS: client-go's health check", tlsConfig(nil), nil, 45 * time.Second},
		{"TLS, timeouts from the environment", tlsConfig(nil),
			map[string]string{"HTTP2_READ_IDLE_TIMEOUT_SECONDS": "10", "HTTP2_PING_TIMEOUT_SECONDS": "5"}, 15 * time.Second},
		{"TLS, a malformed timeout: the default", tlsConfig(nil),
			map[string]string{"HTTP2_READ_IDLE_TIMEOUT_SECONDS": "x"}, 45 * time.Second},
		{"TLS, health check off", tlsConfig(nil), map[string]string{"HTTP2_READ_IDLE_TIMEOUT_SECONDS": "0"}, 0},
		{"TLS, HTTP/2 disabled", tlsConfig(nil), map[string]string{"DISABLE_HTTP2": "1"}, 0},
		{"TLS, HTTP/1.1 only", tlsConfig(func(c *rest.Config) { c.NextProtos = []string{"http/1.1"} }), nil, 0},
		{"no TLS settings: http.DefaultTransport", &rest.Config{Host: "http://127.0.0.1:8080"}, nil, 0},
		{"the program's own transport", tlsConfig(func(c *rest.Config) {
			c.TLSClientConfig = rest.TLSClientConfig{}
			c.Transport = roundTripper{}
		}), nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			hc, err := rest.HTTPClientFor(tc.cfg)
			require.NoError(t, err)
			assert.Equal(t, tc.want, h2health.Bound(hc.Transport))
		})
	}
	assert.Zero(t, h2health.Bound(nil))
}

// The three ways an *http.Transport says it speaks HTTP/2: x/net/http2's
// ConfigureTransports sets TLSNextProto["h2"] before Go 1.27 and Protocols
// from Go 1.27 on (its transport_wrap.go), and a program may set HTTP2.
func TestBoundHTTP2Transports(t *testing.T) {
	h2 := new(http.Protocols)
	h2.SetHTTP1(true)
	h2.SetHTTP2(true)
	h1 := new(http.Protocols)
	h1.SetHTTP1(true)
	for _, tc := range []struct {
		name string
		tr   *http.Transport
		want time.Duration
	}{
		{"TLSNextProto h2", &http.Transport{TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{
			"h2": func(string, *tls.Conn) http.RoundTripper { return nil }}}, 45 * time.Second},
		{"Protocols with HTTP/2", &http.Transport{Protocols: h2}, 45 * time.Second},
		{"Protocols without HTTP/2", &http.Transport{Protocols: h1}, 0},
		{"HTTP2 config", &http.Transport{HTTP2: &http.HTTP2Config{}}, 45 * time.Second},
		{"none of them", &http.Transport{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, h2health.Bound(tc.tr))
		})
	}
}
