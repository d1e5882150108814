// Package ports picks free ports on loopback addresses for the servers that tests, the e2e
// harness and hack/bench start: a port free a moment ago, which a server then listens on. It is
// for tests and test tools only: it imports nothing of dnsplane and owns no production code.
package ports

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"testing"
)

// Free returns a TCP port on 127.0.0.1 that was free a moment ago. Its error is the listen's.
func Free() (int, error) {
	return free("127.0.0.1")
}

// Shared returns a port that was free a moment ago for both TCP and UDP on every one of hosts
// (addresses; "" is every address). It tries 50 ports, then fails.
func Shared(hosts ...string) (int, error) {
	if len(hosts) == 0 {
		return 0, errors.New("ports.Shared: no host")
	}
	for range 50 {
		port, err := free(hosts[0])
		if err != nil {
			return 0, err
		}
		if openOnAll(port, hosts) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no port free for TCP and UDP on every one of %v", hosts)
}

// TCPUDP returns a port free a moment ago for both TCP and UDP on every one of hosts (Shared),
// and fails the test when there is none.
func TCPUDP(t testing.TB, hosts ...string) int {
	t.Helper()
	port, err := Shared(hosts...)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// free asks the kernel for a free TCP port on host.
func free(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %q: %w", host, err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// openOnAll reports whether TCP and UDP both listen on port on every one of hosts.
func openOnAll(port int, hosts []string) bool {
	ok := true
	for _, h := range hosts {
		addr := net.JoinHostPort(h, strconv.Itoa(port))
		tl, err1 := net.Listen("tcp", addr)
		ul, err2 := net.ListenPacket("udp", addr)
		if tl != nil {
			_ = tl.Close()
		}
		if ul != nil {
			_ = ul.Close()
		}
		if err1 != nil || err2 != nil {
			ok = false
		}
	}
	return ok
}

// Dead returns a 127.0.0.1 host:port where nothing listened a moment ago: a UDP port taken from
// the kernel and closed, so that a query there is refused or unanswered. It fails the test when
// it cannot listen.
func Dead(t testing.TB) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	_ = pc.Close()
	return addr
}

// Acceptor listens on TCP host:0 and closes every connection it accepts (a TCP health probe's
// "up" target), until the test ends. It returns the listener's address; it skips the test when
// host cannot be bound (an address this machine does not have).
func Acceptor(t testing.TB, host string) netip.AddrPort {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("listen on %s: %v", host, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	return netip.MustParseAddrPort(l.Addr().String())
}
