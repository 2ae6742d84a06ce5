package k8stest

import "go.uber.org/zap"

// nopLogger keeps the etcd client quiet.
func nopLogger() *zap.Logger { return zap.NewNop() }
