package dnsclient_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/pkg/dnsclient"
)

// TestAddresses: the glue of the served zone's name server is found; a name of the zone without
// addresses gives none; a zone the server does not serve is REFUSED, an error; a server where
// nothing listens is an error.
func TestAddresses(t *testing.T) {
	addr := dnstest.ServeZones(t, "example.test")
	c := dnsclient.Client{}
	got, err := c.Addresses(context.Background(), addr, "ns1.example.test")
	if err != nil || len(got) != 1 || got[0].String() != "127.0.0.1" {
		t.Fatalf("Addresses(ns1.example.test) = %v, %v; want [127.0.0.1]", got, err)
	}
	if got, err := c.Addresses(context.Background(), addr, "nothing.example.test"); err != nil || len(got) != 0 {
		t.Fatalf("Addresses(nothing.example.test) = %v, %v; want none, no error", got, err)
	}
	if _, err := c.Addresses(context.Background(), addr, "ns1.other.test"); !errors.Is(err, dnsclient.ErrNotAuthoritative) {
		t.Fatalf("Addresses of a name the server does not serve: %v, want ErrNotAuthoritative", err)
	}
	l, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.LocalAddr().String()
	_ = l.Close()
	if _, err := (dnsclient.Client{Timeout: 200 * time.Millisecond}).Addresses(context.Background(), dead, "ns1.example.test"); err == nil {
		t.Fatal("Addresses at a closed port: no error")
	}
}
