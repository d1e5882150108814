package dnsserver

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

const (
	testSecret  = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA=="
	otherSecret = "b3RoZXItb3RoZXItb3RoZXItb3RoZXItb3RoZXItb3RoZXI="
)

// TestTSIG_TransfersBeyondLoopbackNeedTheKey: with --local-tsig-key, a
// client of an allowed network beyond loopback transfers only when it signs with the key
// (RFC 8945): unsigned REFUSED, another secret NOTAUTH, the key a signed transfer.
func TestTSIG_TransfersBeyondLoopbackNeedTheKey(t *testing.T) {
	ip, here := localNonLoopback(t)
	if !here {
		return
	}
	key, err := dnswire.NewTSIGKey("xfr", "hmac-sha256", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	store := zonedb.NewStore(zonedb.StoreOptions{})
	if _, err := store.CreateZone("tsig.test", zonedb.ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	m, _ := NewMetrics(prometheus.NewRegistry())
	srv := startServer(t, store, ServerOptions{Addr: net.JoinHostPort(ip.String(), "0"), AllowTransfer: []netip.Prefix{netip.PrefixFrom(ip, 32)}, TSIG: &key, Metrics: m})

	axfr := func(secret string) *dns.Msg {
		q := new(dns.Msg)
		q.SetAxfr("tsig.test.")
		if secret != "" {
			q.SetTsig(key.Name, key.Algorithm, 300, time.Now().Unix())
		}
		return q
	}
	if resp := exchange(t, srv.Addr(), "tcp", axfr("")); resp.Rcode != dns.RcodeRefused {
		t.Errorf("unsigned AXFR: rcode %s, want REFUSED", dns.RcodeToString[resp.Rcode])
	}
	c := &dns.Client{Net: "tcp", Timeout: 2 * time.Second, TsigSecret: map[string]string{key.Name: otherSecret}}
	// miekg/dns's client reads a NOTAUTH that carries a TSIG RR as dns.ErrAuth.
	if resp, _, _ := c.Exchange(axfr(otherSecret), srv.Addr()); resp == nil || resp.Rcode != dns.RcodeNotAuth ||
		resp.IsTsig() == nil || resp.IsTsig().Error != dns.RcodeBadSig {
		t.Errorf("AXFR signed with another secret: %v, want NOTAUTH with TSIG error BADSIG", resp)
	}
	tr := &dns.Transfer{TsigSecret: map[string]string{key.Name: key.Secret}, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second}
	ch, err := tr.In(axfr(key.Secret), srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	var rrs []dns.RR
	for env := range ch {
		if env.Error != nil {
			t.Fatalf("signed AXFR: %v", env.Error)
		}
		rrs = append(rrs, env.RR...)
	}
	if len(rrs) < 3 || rrs[0].Header().Rrtype != dns.TypeSOA {
		t.Errorf("signed AXFR: %v", rrs)
	}
}
