// Package natstest runs a nats-server with JetStream in-process for tests,
// examples and demos of the natskv source: loopback only, a random port
// unless one is given, file storage in a directory of its own. It also
// writes the KV delete and purge markers with their revisions, which
// jetstream.KeyValue does not return.
package natstest

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Config configures [Start]. Its zero value is ready.
type Config struct {
	// Port is the client port. Zero: a random free port.
	Port int
	// StoreDir is the JetStream store directory. Zero: a new temporary
	// directory, removed by [Server.Close].
	StoreDir string
}

// Server is a running nats-server with JetStream. Not safe for concurrent
// use of Restart and Close; the other methods are.
type Server struct {
	srv     *server.Server
	port    int
	dir     string
	ownsDir bool
}

// Start starts a server and waits until it accepts clients (at most 10 s).
//
// Possible errors: the directory's, the server's.
func Start(cfg Config) (*Server, error) {
	s := &Server{port: cfg.Port, dir: cfg.StoreDir}
	if s.dir == "" {
		dir, err := os.MkdirTemp("", "natstest-")
		if err != nil {
			return nil, err
		}
		s.dir, s.ownsDir = dir, true
	}
	if err := s.start(); err != nil {
		s.removeDir()
		return nil, err
	}
	return s, nil
}

func (s *Server) start() error {
	port := s.port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	srv, err := server.NewServer(&server.Options{
		Host:      "127.0.0.1",
		Port:      port,
		JetStream: true,
		StoreDir:  s.dir,
		NoLog:     true,
		NoSigs:    true,
	})
	if err != nil {
		return fmt.Errorf("natstest: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return fmt.Errorf("natstest: server not ready within 10s")
	}
	s.srv = srv
	s.port = srv.Addr().(*net.TCPAddr).Port
	return nil
}

// URL returns the client URL, nats://127.0.0.1:port.
func (s *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.port) }

// Connect returns a client that reconnects quickly and forever, as tests
// of restarts need. The caller closes it.
func (s *Server) Connect() (*nats.Conn, error) {
	return nats.Connect(s.URL(),
		nats.ReconnectWait(20*time.Millisecond),
		nats.MaxReconnects(-1),
		nats.ReconnectJitter(0, 0),
	)
}

// Restart shuts the server down and starts it again on the same port and
// store directory: streams and their messages survive, clients reconnect.
//
// Possible errors: those of Start.
func (s *Server) Restart() error {
	s.Shutdown()
	return s.start()
}

// Shutdown stops the server and waits until it has stopped. Start it
// again with Restart.
func (s *Server) Shutdown() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// Close stops the server and removes the store directory if Start made it.
func (s *Server) Close() {
	s.Shutdown()
	s.removeDir()
}

func (s *Server) removeDir() {
	if s.ownsDir {
		_ = os.RemoveAll(s.dir)
	}
}

// The KV marker headers (as in jetstream's kv.go).
const (
	kvOperation = "KV-Operation"
	kvDelete    = "DEL"
	kvPurge     = "PURGE"
)

// Delete writes a delete marker for key in bucket, as
// jetstream.KeyValue.Delete does, and returns its revision.
func Delete(ctx context.Context, js jetstream.JetStream, bucket, key string) (uint64, error) {
	m := nats.NewMsg("$KV." + bucket + "." + key)
	m.Header.Set(kvOperation, kvDelete)
	ack, err := js.PublishMsg(ctx, m)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// Purge writes a purge marker for key in bucket, removing its history, as
// jetstream.KeyValue.Purge does, and returns its revision.
func Purge(ctx context.Context, js jetstream.JetStream, bucket, key string) (uint64, error) {
	m := nats.NewMsg("$KV." + bucket + "." + key)
	m.Header.Set(kvOperation, kvPurge)
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	ack, err := js.PublishMsg(ctx, m)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// Compact removes every revision of every key of bucket but its last (a
// value or a marker), as a history of one revision per key would have, and
// returns the stream's first sequence after it. The bucket's state is
// unchanged; revisions before the first sequence are expired for the
// source.
func Compact(ctx context.Context, js jetstream.JetStream, bucket string) (uint64, error) {
	stream, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return 0, err
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter("$KV."+bucket+".>"))
	if err != nil {
		return 0, err
	}
	for subj, n := range info.State.Subjects {
		if n < 2 {
			continue
		}
		if err := stream.Purge(ctx, jetstream.WithPurgeSubject(subj), jetstream.WithPurgeKeep(1)); err != nil {
			return 0, err
		}
	}
	info, err = stream.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.FirstSeq, nil
}
