package dnsclient_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"regexp"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/pkg/dnsclient"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

func TestSOA_AuthoritativeAnswerPasses(t *testing.T) {
	addr := dnstest.ServeZones(t, "example.test")
	if err := (dnsclient.Client{}).SOA(context.Background(), addr, "example.test"); err != nil {
		t.Fatalf("SOA of a served zone: %v", err)
	}
}

func TestSOA_RefusedZoneIsNotAuthoritative(t *testing.T) {
	addr := dnstest.ServeZones(t, "example.test")
	err := (dnsclient.Client{}).SOA(context.Background(), addr, "other.test")
	if !errors.Is(err, dnsclient.ErrNotAuthoritative) {
		t.Fatalf("SOA of an unserved zone: got %v, want ErrNotAuthoritative", err)
	}
}

func TestSOA_NameBelowTheApexIsNotTheZone(t *testing.T) {
	addr := dnstest.ServeZones(t, "example.test")
	err := (dnsclient.Client{}).SOA(context.Background(), addr, "sub.example.test")
	if !errors.Is(err, dnsclient.ErrNotAuthoritative) {
		t.Fatalf("SOA of a name that is not a zone apex: got %v, want ErrNotAuthoritative", err)
	}
}

func TestSOAAny_SilentServerTimesOutThenNextAnswers(t *testing.T) {
	addr := dnstest.ServeZones(t, "example.test")
	c := dnsclient.Client{Timeout: 200 * time.Millisecond}
	// 127.0.0.9:9 has no listener: UDP gets no answer (or ICMP refused), TCP is refused.
	if err := c.SOAAny(context.Background(), []string{"127.0.0.9:9", addr}, "example.test"); err != nil {
		t.Fatalf("second server answers, got %v", err)
	}
	if err := c.SOAAny(context.Background(), []string{"127.0.0.9:9"}, "example.test"); err == nil {
		t.Fatal("a silent server passed the SOA check")
	}
	if err := c.SOAAny(context.Background(), nil, "example.test"); !errors.Is(err, dnsclient.ErrNotAuthoritative) {
		t.Fatalf("no servers: got %v", err)
	}
}

// TestQuery_FailureTextIsStable: a failed query's text is the same from one attempt to the
// next, so that it can go into a condition message: no local socket address (a random port per
// query), whether the server's port is closed or the server never answers.
func TestQuery_FailureTextIsStable(t *testing.T) {
	deadAddr := ports.Dead(t)
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	silentTCP, err := net.Listen("tcp", silent.LocalAddr().String())
	if err != nil {
		t.Skipf("TCP port of the silent server is taken: %v", err)
	}
	t.Cleanup(func() { _ = silentTCP.Close() })
	go func() { // accept and never answer; the connections stay open until the listener closes
		var held []net.Conn
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for {
			conn, err := silentTCP.Accept()
			if err != nil {
				return
			}
			held = append(held, conn)
		}
	}()
	localSocket := regexp.MustCompile(`[0-9.]+:[0-9]+->`)
	c := dnsclient.Client{Timeout: 300 * time.Millisecond}
	for _, tc := range []struct {
		name, server, want string
	}{
		{"closed port", deadAddr, "connection refused"},
		{"silent server", silent.LocalAddr().String(), "no answer within 300ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var texts []string
			for range 2 {
				_, err := c.Query(context.Background(), tc.server, "example.test", dns.TypeSOA)
				if err == nil {
					t.Fatal("query succeeded")
				}
				texts = append(texts, err.Error())
			}
			if texts[0] != texts[1] {
				t.Errorf("text differs between attempts:\n  %s\n  %s", texts[0], texts[1])
			}
			if s := localSocket.FindString(texts[0]); s != "" {
				t.Errorf("text names the local socket %s: %s", s, texts[0])
			}
			if want := "query example.test SOA at " + tc.server + ": " + tc.want; texts[0] != want {
				t.Errorf("text %q, want %q", texts[0], want)
			}
		})
	}
}

func TestSerial_FollowsTheZonesChanges(t *testing.T) {
	store := zonedb.NewStore(zonedb.StoreOptions{NameServerAddrs: []netip.Addr{dnstest.Loopback}})
	info, err := store.CreateZone("serial.test", zonedb.ZoneMeta{ID: "serial.test"})
	if err != nil {
		t.Fatal(err)
	}
	addr := dnstest.Serve(t, store)
	got, err := (dnsclient.Client{}).Serial(context.Background(), addr, "serial.test")
	if err != nil || got != info.Serial {
		t.Fatalf("Serial = %d, %v; want the store's %d", got, err, info.Serial)
	}
	rr, _ := dns.NewRR("a.serial.test. 60 IN A 192.0.2.1")
	if err := store.Update("serial.test", func(tx *zonedb.Tx) error {
		return tx.Put(zonedb.RRSet{Name: "a.serial.test.", Type: dns.TypeA, TTL: 60, RRs: []dns.RR{rr}})
	}); err != nil {
		t.Fatal(err)
	}
	after, _ := store.Zone("serial.test")
	got, err = (dnsclient.Client{}).Serial(context.Background(), addr, "serial.test")
	if err != nil || got != after.Serial || got == info.Serial {
		t.Fatalf("Serial after a change = %d, %v; want the store's new %d (was %d)", got, err, after.Serial, info.Serial)
	}
	if _, err := (dnsclient.Client{}).Serial(context.Background(), addr, "other.test"); !errors.Is(err, dnsclient.ErrNotAuthoritative) {
		t.Fatalf("Serial of an unserved zone: %v, want ErrNotAuthoritative", err)
	}
}
