package natskv_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/ginformer/ginformer/source/natskv/natstest"
)

// srv is the in-process server shared by the tests that need no restart;
// each test works in buckets of its own.
var srv *natstest.Server

// TestMain starts the shared server, runs the tests, stops the server and
// then checks for leaked goroutines (goleak.VerifyTestMain would check
// before the server is stopped).
func TestMain(m *testing.M) {
	var err error
	srv, err = natstest.Start(natstest.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	srv.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
