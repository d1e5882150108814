// Package dnstest serves DNS on loopback for tests: dnsplane's embedded authoritative server
// (pkg/dnsserver), a real server answering over UDP and TCP, never a mock. It is imported by tests
// only.
package dnstest

import (
	"net/netip"
	"testing"

	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/dnsserver"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// Loopback is the address the served zones' name servers have as glue (127.0.0.1).
var Loopback = netip.MustParseAddr("127.0.0.1")

// Serve serves store on a free 127.0.0.1 port, UDP and TCP, until the test ends, and returns its
// host:port. The test fails when the server cannot listen, fails while serving, or does not stop
// (testrun.Background).
func Serve(t testing.TB, store *zonedb.Store) string {
	t.Helper()
	return ServeWith(t, store, dnsserver.ServerOptions{}).Addr()
}

// ServeWith is Serve with the server's options (an empty Addr is a free 127.0.0.1 port), and
// returns the server.
func ServeWith(t testing.TB, store *zonedb.Store, opts dnsserver.ServerOptions) *dnsserver.Server {
	t.Helper()
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	srv, err := dnsserver.NewServer(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	testrun.Background(t, "dnstest: server", srv.Start)
	return srv
}

// ServeZones creates an in-memory store with the given empty zones (each with its SOA and its
// name server ns1.<zone>, glue Loopback), serves it as Serve does and returns its host:port.
func ServeZones(t testing.TB, zones ...string) string {
	t.Helper()
	store := zonedb.NewStore(zonedb.StoreOptions{NameServerAddrs: []netip.Addr{Loopback}})
	for _, z := range zones {
		if _, err := store.CreateZone(z, zonedb.ZoneMeta{ID: z}); err != nil {
			t.Fatal(err)
		}
	}
	return Serve(t, store)
}
