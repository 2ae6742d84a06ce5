package etcd_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/ginformer/ginformer/internal/leakcheck"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// srv is the embedded member shared by the tests that need no special
// server settings; each test works under its own prefix.
var srv *etcdtest.Server

// TestMain starts the shared member, runs the tests, stops the member and
// then checks for leaked goroutines (goleak.VerifyTestMain would check
// before the member is stopped).
func TestMain(m *testing.M) {
	if os.Getenv(killChildEnv) != "" {
		os.Exit(m.Run()) // the child of TestWarmRestartSurvivesSIGKILL: its etcd is the parent's
	}
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
