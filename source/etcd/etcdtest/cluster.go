package etcdtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// BinaryEnv names the environment variable holding the path of an etcd
// server binary, set by `make test` from scripts/etcd-binary.sh.
const BinaryEnv = "ETCD_BIN"

// Cluster is a cluster of etcd members running as separate processes of
// the binary in $ETCD_BIN, on loopback, with fast ticks (50 ms heartbeat,
// 250 ms election). Members can be killed with SIGKILL and restarted on
// their data. Safe for concurrent use.
type Cluster struct {
	t       testing.TB
	bin     string
	members []*Member
}

// Member is one process of a [Cluster].
type Member struct {
	Name      string
	ClientURL string
	args      []string
	logPath   string

	// mu guards cmd and done.
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has been waited for
}

// StartCluster starts n members and waits until the cluster has a leader. It
// skips the test when $ETCD_BIN is unset. Every process is killed at the end
// of the test.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	bin := os.Getenv(BinaryEnv)
	if bin == "" {
		t.Skipf("%s is not set: run `make test`, or export %s=$(scripts/etcd-binary.sh)", BinaryEnv, BinaryEnv)
	}
	dir := t.TempDir()
	c := &Cluster{t: t, bin: bin}
	peers := make([]string, n)
	clients := make([]string, n)
	for i := range n {
		peers[i] = "http://" + freeAddr(t)
		clients[i] = "http://" + freeAddr(t)
	}
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peers[i]))
	}
	for i := range n {
		name := fmt.Sprintf("m%d", i)
		m := &Member{
			Name:      name,
			ClientURL: clients[i],
			logPath:   filepath.Join(dir, name+".log"),
			args: []string{
				"--name", name,
				"--data-dir", filepath.Join(dir, name),
				"--listen-client-urls", clients[i], "--advertise-client-urls", clients[i],
				"--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
				"--initial-cluster", strings.Join(initial, ","),
				"--initial-cluster-state", "new", "--initial-cluster-token", filepath.Base(dir),
				"--heartbeat-interval", "50", "--election-timeout", "250",
				"--unsafe-no-fsync", "--log-level", "warn",
			},
		}
		c.members = append(c.members, m)
		if err := m.start(bin); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			c.logTails(t, 40)
		}
	})
	c.WaitLeader(30 * time.Second)
	return c
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func (m *Member) start(bin string) error {
	log, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, m.args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = memberProcAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("etcdtest: start %s: %w", m.Name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(done)
	}()
	m.mu.Lock()
	m.cmd, m.done = cmd, done
	m.mu.Unlock()
	return nil
}

// Kill sends SIGKILL to the member and waits for the process to exit.
func (m *Member) Kill() {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.cmd = nil
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Signal sends sig to the member's process: SIGSTOP freezes it (the kernel
// still accepts connections, nothing answers), SIGCONT thaws it. Freeze
// only for a while: the process is killed at the end of the test whatever
// its state, but a frozen one is not waited for until then.
//
// Possible errors: the member is not running; os.Process.Signal's.
func (m *Member) Signal(sig os.Signal) error {
	m.mu.Lock()
	cmd := m.cmd
	m.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("etcdtest: member %s is not running", m.Name)
	}
	return cmd.Process.Signal(sig)
}

// Members returns the members, in creation order.
func (c *Cluster) Members() []*Member { return c.members }

// Endpoints returns the client URLs of every member.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.ClientURL)
	}
	return eps
}

// Restart starts a killed member again on its data directory.
func (c *Cluster) Restart(m *Member) {
	c.t.Helper()
	if err := m.start(c.bin); err != nil {
		c.t.Fatal(err)
	}
}

// Leader returns the current leader, or nil if no running member reports one.
func (c *Cluster) Leader(ctx context.Context) *Member {
	cli, err := NewClient(c.Endpoints()...)
	if err != nil {
		return nil
	}
	defer cli.Close()
	for _, m := range c.members {
		sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		st, err := cli.Status(sctx, m.ClientURL)
		cancel()
		if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
			return m
		}
	}
	return nil
}

// WaitLeader waits until a member is leader and a quorum write succeeds,
// failing the test after timeout.
func (c *Cluster) WaitLeader(timeout time.Duration) *Member {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	cli, err := NewClient(c.Endpoints()...)
	if err != nil {
		c.t.Fatal(err)
	}
	defer cli.Close()
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cli.Put(ctx, "/etcdtest/probe", "x", clientv3.WithPrevKV())
		cancel()
		if err == nil {
			if l := c.Leader(context.Background()); l != nil {
				return l
			}
		}
		time.Sleep(50 * time.Millisecond) // polling a separate process: no event to wait on
	}
	c.t.Fatalf("etcdtest: no leader within %v", timeout)
	return nil
}

// logTails logs the last n lines of every member's log (warnings and
// errors: elections, lost peers), to explain a failed test.
func (c *Cluster) logTails(t testing.TB, n int) {
	for _, m := range c.members {
		b, err := os.ReadFile(m.logPath)
		if err != nil {
			t.Logf("etcdtest: %s: %v", m.Name, err)
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		lines = lines[max(0, len(lines)-n):]
		t.Logf("etcdtest: last %d log lines of %s:\n%s", len(lines), m.Name, strings.Join(lines, "\n"))
	}
}

func (c *Cluster) stop() {
	for _, m := range c.members {
		m.Kill()
	}
}
