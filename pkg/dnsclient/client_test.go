package dnsclient_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/dnsclient"
	"github.com/dnsplane/dnsplane/pkg/dnsserver"
)

// server starts the embedded server on a free loopback port with one zone.
func server(t *testing.T) string {
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

func TestSOA_AuthoritativeAnswerPasses(t *testing.T) {
	addr := server(t)
	if err := (dnsclient.Client{}).SOA(context.Background(), addr, "example.test"); err != nil {
		t.Fatalf("SOA of a served zone: %v", err)
	}
}

func TestSOA_RefusedZoneIsNotAuthoritative(t *testing.T) {
	addr := server(t)
	err := (dnsclient.Client{}).SOA(context.Background(), addr, "other.test")
	if !errors.Is(err, dnsclient.ErrNotAuthoritative) {
		t.Fatalf("SOA of an unserved zone: got %v, want ErrNotAuthoritative", err)
	}
}

func TestSOA_NameBelowTheApexIsNotTheZone(t *testing.T) {
	addr := server(t)
	err := (dnsclient.Client{}).SOA(context.Background(), addr, "sub.example.test")
	if !errors.Is(err, dnsclient.ErrNotAuthoritative) {
		t.Fatalf("SOA of a name that is not a zone apex: got %v, want ErrNotAuthoritative", err)
	}
}

func TestSOAAny_SilentServerTimesOutThenNextAnswers(t *testing.T) {
	addr := server(t)
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
