package dnsserver

import (
	"context"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// recordingUpdates is an UpdateHandler that knows one key and answers every UPDATE with rcode,
// recording the key names it was handed.
type recordingUpdates struct {
	key   dnswire.TSIGKey
	rcode int
	mu    sync.Mutex
	keys  []string
}

func (u *recordingUpdates) TSIGKey(name, zone string) (dnswire.TSIGKey, bool) {
	return u.key, name == u.key.Name && (zone == "example.com." || zone == "dyn.example.")
}

func (u *recordingUpdates) Zone(name string) (string, bool) {
	return "dyn.example.", dns.IsSubDomain("dyn.example.", name)
}

// clientKey is a client's TSIG provider of its one key.
type clientKey dnswire.TSIGKey

func (k clientKey) Generate(msg []byte, _ *dns.TSIG) ([]byte, error) {
	return dnswire.HMAC(k.Algorithm, k.Secret, msg)
}

func (k clientKey) Verify(msg []byte, t *dns.TSIG) error {
	b, err := k.Generate(msg, t)
	if err != nil {
		return err
	}
	if hex.EncodeToString(b) != strings.ToLower(t.MAC) {
		return dns.ErrSig
	}
	return nil
}

func (u *recordingUpdates) ServeUpdate(_ context.Context, _ *dns.Msg, keyName string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.keys = append(u.keys, keyName)
	return u.rcode
}

// setRcode changes the rcode the handler answers with; a late UDP retransmission may still be
// in the handler.
func (u *recordingUpdates) setRcode(rcode int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.rcode = rcode
}

func (u *recordingUpdates) handed() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.keys...)
}

// signedUpdate sends an UPDATE of zone example.com. over proto, signed with key when its name
// is set, and returns the response and the client's verification of its TSIG.
func signedUpdate(t *testing.T, addr, proto string, key dnswire.TSIGKey) (*dns.Msg, error) {
	t.Helper()
	m := new(dns.Msg)
	m.SetUpdate("example.com.")
	rr, _ := dns.NewRR(`_acme-challenge.example.com. 60 IN TXT "tok"`)
	m.Insert([]dns.RR{rr})
	c := &dns.Client{Net: proto, Timeout: 2 * time.Second}
	if key.Name != "" {
		m.SetTsig(key.Name, key.Algorithm, dnswire.TSIGFudge, time.Now().Unix())
		c.TsigProvider = clientKey(key)
	}
	resp, _, err := c.Exchange(m, addr)
	if resp == nil {
		t.Fatalf("%s UPDATE: %v", proto, err)
	}
	return resp, err
}

// TestUpdate_OnlySignedWithABoundKeyReachesTheHandler: an UPDATE reaches the
// handler only signed with a key it knows, verified (every HMAC, MD5 included, over UDP and
// TCP), and its answer is the handler's rcode, signed; unsigned, an unknown key or another
// secret get NOTAUTH without reaching it.
func TestUpdate_OnlySignedWithABoundKeyReachesTheHandler(t *testing.T) {
	for _, alg := range []string{dns.HmacSHA256, dns.HmacMD5, dns.HmacSHA512} {
		key := dnswire.TSIGKey{Name: "acme.", Algorithm: alg, Secret: testSecret}
		h := &recordingUpdates{key: key, rcode: dns.RcodeRefused}
		srv := startServer(t, exampleStore(t, ""), ServerOptions{Updates: h})
		for _, proto := range []string{"udp", "tcp"} {
			resp, err := signedUpdate(t, srv.Addr(), proto, key)
			if err != nil || resp.Rcode != dns.RcodeRefused || resp.IsTsig() == nil {
				t.Fatalf("%s %s: rcode %s, signed %v, client TSIG check %v; want the handler's REFUSED, signed", alg, proto,
					dns.RcodeToString[resp.Rcode], resp.IsTsig() != nil, err)
			}
			for name, bad := range map[string]dnswire.TSIGKey{
				"unsigned":       {},
				"unknown key":    {Name: "other.", Algorithm: alg, Secret: testSecret},
				"another secret": {Name: "acme.", Algorithm: alg, Secret: otherSecret},
			} {
				resp, _ := signedUpdate(t, srv.Addr(), proto, bad)
				if resp.Rcode != dns.RcodeNotAuth {
					t.Errorf("%s %s %s: rcode %s, want NOTAUTH", alg, proto, name, dns.RcodeToString[resp.Rcode])
				}
			}
		}
		// A NOTAUTH from the handler (a key not bound to the zone) goes unsigned: miekg/dns
		// clients read a signed NOTAUTH as their own TSIG failure, not the server's answer.
		h.setRcode(dns.RcodeNotAuth)
		if resp, err := signedUpdate(t, srv.Addr(), "udp", key); err != nil || resp.Rcode != dns.RcodeNotAuth || resp.IsTsig() != nil {
			t.Fatalf("%s: the handler's NOTAUTH: rcode %s, signed %v, client error %v; want NOTAUTH, unsigned, no error", alg,
				dns.RcodeToString[resp.Rcode], resp.IsTsig() != nil, err)
		}
		if got := h.handed(); len(got) != 3 || got[0] != "acme." || got[1] != "acme." {
			t.Fatalf("%s: the handler was handed %q, want the verified key twice", alg, got)
		}
	}
}

// TestUpdate_WithoutHandlerIsNotImplemented: a server without ServerOptions.Updates answers
// UPDATE NOTIMP.
func TestUpdate_WithoutHandlerIsNotImplemented(t *testing.T) {
	srv := startServer(t, exampleStore(t, ""), ServerOptions{})
	resp, _ := signedUpdate(t, srv.Addr(), "udp", dnswire.TSIGKey{})
	if resp.Rcode != dns.RcodeNotImplemented {
		t.Fatalf("rcode %s, want NOTIMP", dns.RcodeToString[resp.Rcode])
	}
}

// TestUpdate_SOAOfAZoneWithDynamicUpdatesItDoesNotServe: a client that finds the zone to update
// by asking the server for the SOA of the name and its parents (lego, certbot, nsupdate) finds
// a zone with dynamic updates that another provider serves: NODATA with the zone's SOA below
// the apex, the SOA at the apex, both authoritative; other names and types stay REFUSED, and a
// served zone answers from the store.
func TestUpdate_SOAOfAZoneWithDynamicUpdatesItDoesNotServe(t *testing.T) {
	h := &recordingUpdates{key: dnswire.TSIGKey{Name: "acme.", Algorithm: dns.HmacSHA256, Secret: testSecret}}
	srv := startServer(t, exampleStore(t, ""), ServerOptions{Updates: h})
	for _, proto := range []string{"udp", "tcp"} {
		r := ask(t, srv.Addr(), proto, "_acme-challenge.www.Dyn.example.", dns.TypeSOA)
		if r.Rcode != dns.RcodeSuccess || !r.Authoritative || len(r.Answer) != 0 || len(r.Ns) != 1 || r.Ns[0].Header().Name != "dyn.example." {
			t.Fatalf("%s: SOA below the apex: %v", proto, r)
		}
		r = ask(t, srv.Addr(), proto, "dyn.example.", dns.TypeSOA)
		if r.Rcode != dns.RcodeSuccess || !r.Authoritative || len(r.Answer) != 1 || r.Answer[0].(*dns.SOA).Hdr.Name != "dyn.example." {
			t.Fatalf("%s: SOA at the apex: %v", proto, r)
		}
		if r := ask(t, srv.Addr(), proto, "_acme-challenge.dyn.example.", dns.TypeTXT); r.Rcode != dns.RcodeRefused {
			t.Fatalf("%s: TXT in a zone the server does not serve: %s, want REFUSED", proto, dns.RcodeToString[r.Rcode])
		}
		if r := ask(t, srv.Addr(), proto, "other.example.", dns.TypeSOA); r.Rcode != dns.RcodeRefused {
			t.Fatalf("%s: SOA of a zone without dynamic updates: %s, want REFUSED", proto, dns.RcodeToString[r.Rcode])
		}
		if r := ask(t, srv.Addr(), proto, "example.test.", dns.TypeSOA); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			t.Fatalf("%s: a served zone's SOA: %v", proto, r)
		}
	}
}

// TestUpdate_ASignedSOAQueryBelowTheApexIsAnsweredSigned: a client that finds the zone by asking
// for the SOA of the name it will update (nsupdate without a "zone" line) signs that query with
// its key; the key is the one of the enclosing zone with dynamic updates, so the answer is the
// zone's SOA, signed, not NOTAUTH. Another secret still gets NOTAUTH.
func TestUpdate_ASignedSOAQueryBelowTheApexIsAnsweredSigned(t *testing.T) {
	key := dnswire.TSIGKey{Name: "acme.", Algorithm: dns.HmacSHA256, Secret: testSecret}
	srv := startServer(t, exampleStore(t, ""), ServerOptions{Updates: &recordingUpdates{key: key}})
	for _, proto := range []string{"udp", "tcp"} {
		for _, k := range []dnswire.TSIGKey{key, {Name: "acme.", Algorithm: dns.HmacSHA256, Secret: otherSecret}} {
			m := new(dns.Msg)
			m.SetQuestion("_acme-challenge.www.dyn.example.", dns.TypeSOA)
			m.SetTsig(k.Name, k.Algorithm, dnswire.TSIGFudge, time.Now().Unix())
			c := &dns.Client{Net: proto, Timeout: 2 * time.Second, TsigProvider: clientKey(k)}
			r, _, err := c.Exchange(m, srv.Addr())
			if r == nil {
				t.Fatalf("%s: %v", proto, err)
			}
			if k.Secret == otherSecret {
				if r.Rcode != dns.RcodeNotAuth {
					t.Errorf("%s, another secret: %s, want NOTAUTH", proto, dns.RcodeToString[r.Rcode])
				}
				continue
			}
			if err != nil || r.Rcode != dns.RcodeSuccess || r.IsTsig() == nil || len(r.Ns) != 1 || r.Ns[0].Header().Name != "dyn.example." {
				t.Fatalf("%s: rcode %s, signed %v, client TSIG check %v, authority %v; want the zone's SOA, signed",
					proto, dns.RcodeToString[r.Rcode], r.IsTsig() != nil, err, r.Ns)
			}
		}
	}
}
