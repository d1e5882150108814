package dnsserver

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/internal/testing/testrun"
)

const (
	testSecret  = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA=="
	otherSecret = "b3RoZXItb3RoZXItb3RoZXItb3RoZXItb3RoZXItb3RoZXI="
)

// TestNewTSIGKey: the --local-tsig-key parts, a base64 secret or a tsig-keygen key file, and
// errors that never hold the secret; String redacts it.
func TestNewTSIGKey(t *testing.T) {
	keyFile := "key \"xfr\" {\n\talgorithm hmac-sha256;\n\tsecret \"" + testSecret + "\";\n};\n"
	for _, tc := range []struct {
		name, alg, secret string
		want              string // the error's substring; "" = ok
	}{
		{"xfr", "hmac-sha256", testSecret, ""},
		{"Xfr.Key.", "HMAC-SHA512.", testSecret + "\n", ""},
		{"xfr", "hmac-sha256", keyFile, ""},
		{"xfr", "hmac-md5", testSecret, `TSIG algorithm "hmac-md5"`},
		{"", "hmac-sha256", testSecret, "not a domain name"},
		{"xfr", "hmac-sha256", "not base64!", "not base64"},
	} {
		k, err := NewTSIGKey(tc.name, tc.alg, tc.secret)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("NewTSIGKey(%q, %q): %v", tc.name, tc.alg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("NewTSIGKey(%q, %q) = %v, want an error with %q", tc.name, tc.alg, err, tc.want)
		case err != nil && strings.Contains(err.Error(), tc.secret):
			t.Errorf("the error shows the secret: %v", err)
		case err == nil && (k.Secret != testSecret || !strings.HasSuffix(k.Name, ".") || !strings.HasSuffix(k.Algorithm, ".")):
			t.Errorf("NewTSIGKey(%q, %q) = %+v", tc.name, tc.alg, k)
		}
		if s := fmt.Sprintf("%v %+v %#v %s", k, k, k, &k); strings.Contains(s, testSecret) {
			t.Errorf("the key prints its secret: %s", s)
		}
	}
}

// TestTSIG_TransfersBeyondLoopbackNeedTheKey (issue 16, item 2, TSIG): with --local-tsig-key, a
// client of an allowed network beyond loopback transfers only when it signs with the key
// (RFC 8945): unsigned REFUSED, another secret NOTAUTH, the key a signed transfer.
func TestTSIG_TransfersBeyondLoopbackNeedTheKey(t *testing.T) {
	ip, here := localNonLoopback(t)
	if !here {
		return
	}
	key, err := NewTSIGKey("xfr", "hmac-sha256", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore(StoreOptions{})
	if _, err := store.CreateZone("tsig.test", ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	m, _ := NewMetrics(prometheus.NewRegistry())
	srv, err := NewServer(store, ServerOptions{Addr: net.JoinHostPort(ip.String(), "0"), AllowTransfer: []netip.Prefix{netip.PrefixFrom(ip, 32)}, TSIG: &key, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	testrun.Background(t, "server", srv.Start)

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
	if resp, _, err := c.Exchange(axfr(otherSecret), srv.Addr()); err != nil || resp.Rcode != dns.RcodeNotAuth {
		t.Errorf("AXFR signed with another secret: %v %v, want NOTAUTH", resp, err)
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
