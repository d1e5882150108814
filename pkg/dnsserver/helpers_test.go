package dnsserver

import (
	"context"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
	"github.com/dnsplane/dnsplane/pkg/zonedb/zonedbtest"
)

// The store helpers are zonedbtest's, under the short names the tests were written with.
var (
	exampleStore  = zonedbtest.ExampleStore
	countingClock = zonedbtest.CountingClock
	put           = zonedbtest.Put
	rrs           = zonedbtest.RRs
	texts         = zonedbtest.Texts
	bigTXT        = zonedbtest.BigTXT
)

// startServer serves store on opts.Addr (default 127.0.0.1:<ephemeral>) until the test ends.
func startServer(t testing.TB, store *zonedb.Store, opts ServerOptions) *Server {
	t.Helper()
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	srv, err := NewServer(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	testrun.Background(t, "server", srv.Start)
	return srv
}

// exchange sends m to addr over proto ("udp" or "tcp") with a 2 s timeout.
func exchange(t testing.TB, addr, proto string, m *dns.Msg) *dns.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c := &dns.Client{Net: proto, UDPSize: 65535}
	resp, _, err := c.ExchangeContext(ctx, m, addr)
	if err != nil {
		t.Fatalf("%s query %v: %v", proto, m.Question, err)
	}
	return resp
}

// ask queries name/qtype over proto without EDNS0.
func ask(t testing.TB, addr, proto, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	return exchange(t, addr, proto, m)
}

func ptr[T any](v T) *T { return &v }
