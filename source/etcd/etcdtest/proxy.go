package etcdtest

import (
	"net"
	"sync"
	"time"
)

// Proxy is a TCP proxy on loopback between clients and one target, whose
// flows can be cut silently: [Proxy.Blackhole] makes every open flow drop
// what it receives in both directions without closing anything, the way a
// lost NAT entry or a dead peer behind a firewall looks (a half-open
// connection). [Proxy.SetBlackhole] does the same to the flows opened while
// it is on, a network partition. [Proxy.SetRefuse] closes flows and refuses
// new ones, a disconnected period; [Proxy.SetDelay] slows new connections
// down, a distant member. Safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	// mu guards the fields below.
	mu        sync.Mutex
	flows     map[*flow]struct{}
	refuse    bool
	blackhole bool          // new flows are blackholed from the start
	delay     time.Duration // new flows wait this long before connecting (SetDelay)
	closed    bool
}

// flow is one proxied connection pair; server is nil for a flow
// blackholed from the start (it never reaches the target).
type flow struct {
	client, server net.Conn
	mu             sync.Mutex // guards dead
	dead           bool       // blackholed: data is read and dropped
}

// NewProxy listens on 127.0.0.1 (a free port) and forwards each connection
// to target ("host:port").
//
// Possible errors: the listener's.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, flows: make(map[*flow]struct{})}
	p.wg.Go(p.accept)
	return p, nil
}

// Endpoint returns the proxy's client URL, "http://127.0.0.1:port".
func (p *Proxy) Endpoint() string { return "http://" + p.ln.Addr().String() }

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse, dead, delay := p.refuse || p.closed, p.blackhole, p.delay
		p.mu.Unlock()
		if refuse {
			_ = c.Close()
			continue
		}
		f := &flow{client: c, dead: dead}
		if delay > 0 && !dead {
			p.wg.Go(func() {
				time.Sleep(delay) // the delay is what is simulated
				p.open(f)
			})
			continue
		}
		p.open(f)
	}
}

// open connects the flow to the target (unless it is blackholed from the
// start) and starts forwarding.
func (p *Proxy) open(f *flow) {
	if !f.dead {
		var err error
		if f.server, err = net.Dial("tcp", p.target); err != nil {
			_ = f.client.Close()
			return
		}
	}
	p.mu.Lock()
	if p.closed || (p.refuse && !f.dead) {
		p.mu.Unlock()
		f.close()
		return
	}
	p.flows[f] = struct{}{}
	p.mu.Unlock()
	if f.dead { // read and drop what the client sends, answer nothing
		p.wg.Go(func() { p.pipe(f, nil, f.client) })
		return
	}
	p.wg.Go(func() { p.pipe(f, f.server, f.client) })
	p.wg.Go(func() { p.pipe(f, f.client, f.server) })
}

// close closes both sides of the flow.
func (f *flow) close() {
	_ = f.client.Close()
	if f.server != nil {
		_ = f.server.Close()
	}
}

// pipe copies from src to dst until either side fails, dropping the data
// once the flow is blackholed.
func (p *Proxy) pipe(f *flow, dst, src net.Conn) {
	defer func() {
		f.close()
		p.mu.Lock()
		delete(p.flows, f)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			f.mu.Lock()
			dead := f.dead
			f.mu.Unlock()
			if !dead {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return // io.EOF or a closed connection: close both sides
		}
	}
}

// Blackhole silently kills every open flow: from now on they forward
// nothing, in either direction, and are never closed by the proxy (until
// Close). New connections are forwarded normally.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackholeFlowsLocked()
}

// blackholeFlowsLocked kills every open flow: see [Proxy.Blackhole].
func (p *Proxy) blackholeFlowsLocked() {
	for f := range p.flows {
		f.mu.Lock()
		f.dead = true
		f.mu.Unlock()
	}
}

// SetBlackhole, when on, blackholes every open flow (as [Proxy.Blackhole])
// and every flow accepted until it is turned off: those connect but never
// reach the target, the way a partitioned network looks to a client whose
// connection attempts are not refused. Off, new connections are forwarded
// again; the flows blackholed meanwhile stay dead (their bytes are lost, as
// after a lost NAT entry), so only new connections work.
func (p *Proxy) SetBlackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackhole = on
	if on {
		p.blackholeFlowsLocked()
	}
}

// SetRefuse, when on, closes every open flow and closes new connections at
// once; off, the proxy forwards again.
func (p *Proxy) SetRefuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	var open []*flow
	if on {
		for f := range p.flows {
			open = append(open, f)
		}
	}
	p.mu.Unlock()
	for _, f := range open {
		f.close()
	}
}

// SetDelay makes every connection accepted from now on wait d before the
// proxy connects it to the target and forwards anything (0: no wait), the
// way a distant or slow member looks to a client: its handshake, and so its
// first answer, come d later. Connections already open are not affected.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// Close stops the proxy, closes every flow and waits for its goroutines.
// It is idempotent.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	var open []*flow
	for f := range p.flows {
		open = append(open, f)
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, f := range open {
		f.close()
	}
	p.wg.Wait()
}
