package signing

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/types"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/dnsserver"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// recordingServer is a real embedded server (unstarted) that records the policies it is given.
type recordingServer struct {
	*dnsserver.Server
	mu  sync.Mutex
	got map[string]*dnssec.Policy
}

func (r *recordingServer) SetSigning(origin string, p *dnssec.Policy) error {
	if err := r.Server.SetSigning(origin, p); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got[origin] = p
	return nil
}

func newRecording(t *testing.T) *recordingServer {
	t.Helper()
	srv, err := dnsserver.NewServer(zonedb.NewStore(zonedb.StoreOptions{Dir: t.TempDir()}), dnsserver.ServerOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	return &recordingServer{Server: srv, got: map[string]*dnssec.Policy{}}
}

func keySet(t *testing.T, zone string) []byte {
	t.Helper()
	k, err := dnssec.Generate(zone, 13, dnssec.RoleCSK, dnssec.Active, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := dnssec.KeySet{Zone: zone + ".", Keys: []dnssec.Key{k}}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func zone(ns, name, origin string, d *dnsv1.DNSSEC) *dnsv1.DNSZone {
	z := &dnsv1.DNSZone{Spec: dnsv1.DNSZoneSpec{Zone: origin, DNSSEC: d}}
	z.Namespace, z.Name = ns, name
	return z
}

// TestPolicy_FromSpec: denial NSEC3 carries its parameters, Compact gives compact denial, NSEC
// and no type give NSEC, and the signature settings are the spec's seconds; another zone's keys
// or text that is no key set are refused without quoting it.
func TestPolicy_FromSpec(t *testing.T) {
	raw := keySet(t, "a.test")
	d := &dnsv1.DNSSEC{Enabled: true, SignatureValiditySeconds: 7200, SignatureRefreshSeconds: 600,
		Denial: dnsv1.DNSSECDenial{Type: dnsv1.DenialNSEC3, NSEC3: &dnsv1.NSEC3Parameters{Iterations: 2, Salt: "abcd"}}}
	p, err := policy("a.test.", raw, d)
	if err != nil || p.NSEC3 == nil || p.NSEC3.Iterations != 2 || p.NSEC3.Salt != "abcd" || p.Validity != 2*time.Hour || p.Refresh != 10*time.Minute {
		t.Fatalf("policy = %+v, %v", p, err)
	}
	for _, typ := range []dnsv1.DenialType{dnsv1.DenialNSEC, dnsv1.DenialCompact, ""} {
		p, err := policy("a.test.", raw, &dnsv1.DNSSEC{Enabled: true, Denial: dnsv1.DNSSECDenial{Type: typ}})
		if err != nil || p.NSEC3 != nil || p.Compact != (typ == dnsv1.DenialCompact) {
			t.Fatalf("denial %q: policy %+v, %v; want NSEC3 off, compact %v", typ, p, err, typ == dnsv1.DenialCompact)
		}
	}
	if _, err := policy("b.test.", raw, d); err == nil {
		t.Fatal("another zone's keys were taken")
	}
	if _, err := policy("a.test.", []byte("PrivateKey: secret"), d); err == nil || err.Error() != "the key set does not parse" {
		t.Fatalf("text that is no key set: %v", err)
	}
}

// TestSigner_KeepsAndReleases: an unusable key set keeps the zone's policy; a DNSZone that did
// not sign a zone never unsigns it; the one that did does.
func TestSigner_KeepsAndReleases(t *testing.T) {
	srv := newRecording(t)
	s := &Signer{Server: srv, Log: logr.Discard()}
	on := &dnsv1.DNSSEC{Enabled: true}
	a := types.NamespacedName{Namespace: "n1", Name: "a"}
	other := types.NamespacedName{Namespace: "n2", Name: "a"}
	s.sign(a, zone("n1", "a", "a.test", on), keySet(t, "a.test"))
	first := srv.got["a.test."]
	if first == nil {
		t.Fatal("not signed")
	}
	s.sign(a, zone("n1", "a", "a.test", on), []byte("garbage"))
	s.sign(a, zone("n1", "a", "a.test", on), keySet(t, "b.test"))
	if srv.got["a.test."] != first {
		t.Fatal("an unusable key set replaced the policy")
	}
	s.unsign(other)
	if srv.got["a.test."] != first {
		t.Fatal("a DNSZone that signed nothing unsigned the zone")
	}
	s.unsign(a)
	if p, ok := srv.got["a.test."]; !ok || p != nil {
		t.Fatalf("after unsign: %v, %v; want nil", p, ok)
	}
}

// TestSigner_CompactDenialIsServed: a DNSZone with denial Compact has the embedded server deny
// a name that does not exist as RFC 9824 does: NOERROR and one NSEC at the name asked, next
// name its immediate successor, types RRSIG NSEC NXNAME; never the zone's NSEC chain.
func TestSigner_CompactDenialIsServed(t *testing.T) {
	store := zonedb.NewStore(zonedb.StoreOptions{Dir: t.TempDir()})
	if err := store.Load(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateZone("a.test", zonedb.ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	srv, err := dnsserver.NewServer(store, dnsserver.ServerOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	testrun.Background(t, "server", srv.Start)
	s := &Signer{Server: srv, Log: logr.Discard()}
	d := &dnsv1.DNSSEC{Enabled: true, Denial: dnsv1.DNSSECDenial{Type: dnsv1.DenialCompact}}
	if !s.sign(types.NamespacedName{Namespace: "n1", Name: "a"}, zone("n1", "a", "a.test", d), keySet(t, "a.test")) {
		t.Fatal("not signed")
	}
	m := new(dns.Msg)
	m.SetQuestion("nothere.a.test.", dns.TypeA)
	m.SetEdns0(4096, true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, _, err := (&dns.Client{Net: "tcp"}).ExchangeContext(ctx, m, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	var nsecs []string
	for _, rr := range resp.Ns {
		if rr.Header().Rrtype == dns.TypeNSEC {
			nsecs = append(nsecs, rr.String())
		}
	}
	want := "nothere.a.test.\t60\tIN\tNSEC\t\\000.nothere.a.test. RRSIG NSEC NXNAME"
	if resp.Rcode != dns.RcodeSuccess || len(nsecs) != 1 || nsecs[0] != want {
		t.Fatalf("compact denial of nothere.a.test: %s with NSEC %q, want NOERROR with %q", dns.RcodeToString[resp.Rcode], nsecs, want)
	}
}
