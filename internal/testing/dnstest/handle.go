package dnstest

import (
	"net"
	"testing"

	"github.com/miekg/dns"
)

// HandleUDP serves h over UDP on a free port of host (a loopback address) until the test ends,
// and returns its host:port once it serves: for a server whose answers a test writes (a peer, a
// hostile server). The test fails when it cannot listen.
func HandleUDP(t testing.TB, host string, h dns.HandlerFunc) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	run(t, &dns.Server{PacketConn: pc, Handler: h})
	return pc.LocalAddr().String()
}

// Handle serves h over UDP and TCP on one free port of 127.0.0.1 until the test ends, and
// returns its host:port once both serve. It tries five ports, then fails the test.
func Handle(t testing.TB, h dns.HandlerFunc) string {
	t.Helper()
	for range 5 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := pc.LocalAddr().String()
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			_ = pc.Close()
			continue
		}
		run(t, &dns.Server{PacketConn: pc, Handler: h})
		run(t, &dns.Server{Listener: ln, Handler: h})
		return addr
	}
	t.Fatal("no free loopback port for UDP and TCP")
	return ""
}

// run starts srv on its listener, waits until it serves, and shuts it down when the test ends.
func run(t testing.TB, srv *dns.Server) {
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	done := make(chan error, 1)
	go func() { done <- srv.ActivateAndServe() }()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("dnstest: serve: %v", err)
	}
	t.Cleanup(func() { _ = srv.Shutdown() })
}
