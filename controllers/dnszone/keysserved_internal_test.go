package dnszone

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/dnsserver"
	"github.com/dnsplane/dnsplane/pkg/zonedb/zonedbtest"
)

// signedServer serves example.test signed with ks on loopback and returns its address.
func signedServer(t *testing.T, ks *dnssec.KeySet) string {
	t.Helper()
	srv, err := dnsserver.NewServer(zonedbtest.ExampleStore(t, ""), dnsserver.ServerOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if ks != nil {
		if err := srv.SetSigning("example.test.", &dnssec.Policy{Keys: *ks}); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	testrun.Background(t, "server", srv.Start)
	return srv.Addr()
}

func testKeys(t *testing.T, roles ...dnssec.Role) dnssec.KeySet {
	t.Helper()
	ks := dnssec.KeySet{Zone: "example.test."}
	for _, r := range roles {
		k, err := dnssec.Generate("example.test", dns.ECDSAP256SHA256, r, dnssec.Active, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ks.Keys = append(ks.Keys, k)
	}
	return ks
}

// TestKeysServed: a server signing with the key set is seen serving it; one serving the zone
// unsigned, one signing with a key set that lacks a key of the current one (a ZSK rollover's new,
// Published key), and an address nobody answers on are not, and the error names the server.
func TestKeysServed(t *testing.T) {
	ks := testKeys(t, dnssec.RoleKSK, dnssec.RoleZSK)
	old := ks
	next, err := dnssec.Generate("example.test", dns.ECDSAP256SHA256, dnssec.RoleZSK, dnssec.Published, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rolled := dnssec.KeySet{Zone: ks.Zone, Keys: append(append([]dnssec.Key{}, ks.Keys...), next)}
	signing, unsigned, behind := signedServer(t, &ks), signedServer(t, nil), signedServer(t, &old)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if ok, err := keysServed(ctx, []string{signing}, ks); !ok {
		t.Fatalf("a server signing with the key set: %v", err)
	}
	for _, tc := range []struct {
		name    string
		servers []string
		ks      dnssec.KeySet
	}{
		{"unsigned", []string{signing, unsigned}, ks},
		{"behind", []string{behind}, rolled},
		{"silent", []string{"127.0.0.1:1"}, ks},
		{"none", nil, ks},
	} {
		ok, err := keysServed(ctx, tc.servers, tc.ks)
		if ok || err == nil {
			t.Errorf("%s: served %v (%v); want false with a reason", tc.name, ok, err)
			continue
		}
		if len(tc.servers) > 0 && !strings.Contains(err.Error(), tc.servers[len(tc.servers)-1]) {
			t.Errorf("%s: error %q does not name the server", tc.name, err)
		}
	}
}
