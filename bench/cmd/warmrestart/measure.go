package main

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// What a child measures of its etcd client: the requests it sends (CPU,
// memory, the informer's events and log lines: bench/internal/childmetrics).

// rpcCounter counts the requests a client sends, by gRPC method, and the
// range reads of the prefix among them: Range requests with a range end
// starting in the prefix, and RangeStream calls.
type rpcCounter struct {
	prefix       string
	prefixRanges atomic.Int64
	mu           sync.Mutex
	unary        map[string]int64 // method's last element → calls
	streams      map[string]int64
}

func newRPCCounter(prefix string) *rpcCounter {
	return &rpcCounter{prefix: prefix, unary: map[string]int64{}, streams: map[string]int64{}}
}

// dialOptions returns the interceptors to give the client; the source
// dials its own connections with the client's dial options, so they count
// its reads and watches too.
func (c *rpcCounter) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if r, ok := req.(*pb.RangeRequest); ok && len(r.RangeEnd) > 0 && strings.HasPrefix(string(r.Key), c.prefix) {
				c.prefixRanges.Add(1)
			}
			c.count(c.unary, method)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			if strings.HasSuffix(method, "/RangeStream") {
				c.prefixRanges.Add(1) // the source streams nothing but its prefix
			}
			c.count(c.streams, method)
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
}

func (c *rpcCounter) count(m map[string]int64, method string) {
	c.mu.Lock()
	m[method[strings.LastIndexByte(method, '/')+1:]]++
	c.mu.Unlock()
}

// snapshot returns the counts so far.
func (c *rpcCounter) snapshot() rpcCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := rpcCounts{PrefixRanges: c.prefixRanges.Load(), Unary: map[string]int64{}, Streams: map[string]int64{}}
	for k, v := range c.unary {
		r.Unary[k] = v
	}
	for k, v := range c.streams {
		r.Streams[k] = v
	}
	return r
}

// rpcCounts is what an rpcCounter counted.
type rpcCounts struct {
	PrefixRanges int64            `json:"prefixRanges"`
	Unary        map[string]int64 `json:"unary"`
	Streams      map[string]int64 `json:"streams"`
}
