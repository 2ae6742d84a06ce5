package lease_test

import (
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/internal/leakcheck"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// srv is the embedded member shared by the tests; each test works under its
// own prefix.
var srv *etcdtest.Server

// TestMain starts the shared member, runs the tests, stops the member and
// then checks for leaked goroutines (goleak.VerifyTestMain would check
// before the member is stopped).
func TestMain(m *testing.M) {
	var err error
	srv, err = etcdtest.Start(etcdtest.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	srv.Close()
	os.Exit(leakcheck.Check(code))
}

// shardTTL is the members' lease TTL: etcd's minimum here is 1 s, which a
// loaded machine under -race misses now and then.
const shardTTL = 2 * time.Second

func quiet() logr.Logger { return logr.FromSlogHandler(slog.DiscardHandler) }

var prefixN atomic.Int64

// newPrefix returns a key prefix of the test's own.
func newPrefix(t testing.TB) string {
	return fmt.Sprintf("/test/%s/%d/", t.Name(), prefixN.Add(1))
}

// client returns a client of the shared member, closed after the test.
func client(t testing.TB) *clientv3.Client {
	t.Helper()
	return srv.NewTestClient(t)
}
