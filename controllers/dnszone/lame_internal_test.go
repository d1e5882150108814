package dnszone

import (
	"context"
	"net"
	"testing"

	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
)

// TestResolves: out-of-bailiwick name servers are looked up at the configured DNS addresses, or
// with none, through the system resolver (here a Go resolver dialling the same real server). A
// name with an address resolves; a name without one is a definite no; a refused lookup is no
// answer at all (so it never withdraws a confirmed link).
func TestResolves(t *testing.T) {
	addr := dnstest.ServeZones(t, "example.test")
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
