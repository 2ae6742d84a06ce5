// Package integration holds the informer-level tests and benchmarks of the
// etcd source: a SharedInformer over an embedded etcd through a proxy that
// can refuse or blackhole connections. It has no exported API.
package integration
