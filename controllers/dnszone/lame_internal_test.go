package dnszone

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/dnsserver"
)

// servedZone starts the embedded server on loopback with zone example.test (ns1.example.test has
// glue 127.0.0.1) and returns its address.
func servedZone(t *testing.T) string {
	t.Helper()
	store := dnsserver.NewStore(dnsserver.StoreOptions{NameServerAddrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}})
	if _, err := store.CreateZone("example.test", dnsserver.ZoneMeta{ID: "example.test"}); err != nil {
		t.Fatal(err)
	}
	srv, err := dnsserver.NewServer(store, dnsserver.ServerOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv.Addr()
}

// TestResolves: out-of-bailiwick name servers are looked up at the configured DNS addresses, or
// with none, through the system resolver (here a Go resolver dialling the same real server). A
// name with an address resolves; a name without one is a definite no; a refused lookup is no
// answer at all (so it never withdraws a confirmed link).
func TestResolves(t *testing.T) {
	addr := servedZone(t)
	goResolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	cases := []struct {
		name         string
		host         string
		ok, answered bool
	}{
		{"has an address", "ns1.example.test", true, true},
		{"no such name", "nothing.example.test", false, true},
		{"refused: zone not served", "ns1.elsewhere.test", false, false},
	}
	for _, path := range []struct {
		name    string
		servers []string
	}{{"DNS address", []string{addr}}, {"system resolver", nil}} {
		r := &Reconciler{NSResolver: goResolver}
		for _, tc := range cases {
			t.Run(path.name+"/"+tc.name, func(t *testing.T) {
				ok, answered := r.resolves(context.Background(), path.servers, tc.host)
				if ok != tc.ok || answered != tc.answered {
					t.Fatalf("resolves(%s) = %t, %t; want %t, %t", tc.host, ok, answered, tc.ok, tc.answered)
				}
			})
		}
	}
}
