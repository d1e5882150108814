package pdns_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/faultproxy"
	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
)

// signingKeys are the keys of ks as provider.KeySigner takes them.
func signingKeys(ks []dnssec.Key) []provider.SigningKey {
	var out []provider.SigningKey
	for _, k := range ks {
		out = append(out, provider.SigningKey{DNSKEY: k.DNSKEY, Role: string(k.Role), PrivateKey: k.DNSKEY.PrivateKeyString(k.Private),
			Published: k.State != dnssec.Generated, Active: k.State == dnssec.Active})
	}
	return out
}

// newKey makes a key of zone in role and state.
func newKey(t *testing.T, zone string, role dnssec.Role, state dnssec.State) dnssec.Key {
	t.Helper()
	k, err := dnssec.Generate(zone, dns.ECDSAP256SHA256, role, state, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// delvAnchors writes a delv trust-anchors file with the DS of each key and returns its path.
func delvAnchors(t *testing.T, keys ...dnssec.Key) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("trust-anchors {\n")
	for _, k := range keys {
		d := k.DNSKEY.ToDS(dns.SHA256)
		fmt.Fprintf(&b, "    %s static-ds %d %d %d \"%s\";\n", d.Hdr.Name, d.KeyTag, d.Algorithm, d.DigestType, d.Digest)
	}
	b.WriteString("};\n")
	path := filepath.Join(t.TempDir(), "anchors.conf")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// delv asks delv, with the server at addr as its resolver, for name/qtype validated from the
// anchors at zone, and returns its output.
func delv(t *testing.T, addr, anchors, zone, name string, qtype uint16) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, "delv", "@"+host, "-p", port, "-a", anchors, "+root="+zone, name, dns.TypeToString[qtype]).CombinedOutput()
	return string(out)
}

// denialTypes are the types of the records in the authority section of a DO answer to
// name/qtype from addr, and its rcode.
func denialTypes(t *testing.T, addr, name string, qtype uint16) (int, map[uint16]bool) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(4096, true)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatal(err)
	}
	types := map[uint16]bool{}
	for _, rr := range r.Ns {
		types[rr.Header().Rrtype] = true
	}
	return r.Rcode, types
}

// TestSetKeys_DelvValidatesNSECAndNSEC3: a zone PowerDNS signs with a KSK and a ZSK handed over
// by SetKeys answers a name and an NXDOMAIN that delv, anchored at the KSK's DS, fully
// validates, with NSEC, then NSEC3 (0 iterations, no salt), then NSEC again; the denial proofs
// are of that type. A second SetKeys with the same keys sends no write. With an anchor of a key
// the zone does not hold, delv validates nothing (the check can fail).
func TestSetKeys_DelvValidatesNSECAndNSEC3(t *testing.T) {
	hackrun.Need(t, "bind9-dnsutils", "delv")
	srv := startPDNS(t)
	proxy := faultproxy.New(srv.APIURL, faultproxy.Options{})
	t.Cleanup(proxy.Close)
	p, err := pdns.New(pdns.Config{APIURL: proxy.URL(), APIKey: srv.Key, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const zone = "keys.pdns.test."
	z, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "keys.pdns.test", CallerReference: "keys"})
	if err != nil {
		t.Fatal(err)
	}
	www := &provider.RecordSet{Name: "www.keys.pdns.test", Type: "A", TTL: 300, Targets: []string{"192.0.2.1"}}
	if err := p.ApplyChanges(ctx(t), z.ID, []provider.Change{{Action: provider.ActionCreate, After: www}}); err != nil {
		t.Fatal(err)
	}
	ksk, zsk := newKey(t, zone, dnssec.RoleKSK, dnssec.Active), newKey(t, zone, dnssec.RoleZSK, dnssec.Active)
	keys := signingKeys([]dnssec.Key{ksk, zsk})
	anchors := delvAnchors(t, ksk)
	for _, step := range []struct {
		name   string
		denial provider.Denial
		proof  uint16 // the type of the NXDOMAIN's proofs
		other  uint16 // the type it must not hold
	}{
		{"NSEC", provider.Denial{}, dns.TypeNSEC, dns.TypeNSEC3},
		{"NSEC3", provider.Denial{NSEC3: &provider.NSEC3Param{}}, dns.TypeNSEC3, dns.TypeNSEC},
		{"NSEC again", provider.Denial{}, dns.TypeNSEC, dns.TypeNSEC3},
	} {
		signed, err := p.SetKeys(ctx(t), z.ID, keys, step.denial)
		if err != nil {
			t.Fatalf("%s: SetKeys: %v", step.name, err)
		}
		if signed.DNSKEYTTL != time.Duration(pdns.SOAMinimum)*time.Second {
			t.Errorf("%s: DNSKEY TTL %s, want the SOA minimum %ds", step.name, signed.DNSKEYTTL, pdns.SOAMinimum)
		}
		for _, q := range []struct {
			name  string
			rcode string
		}{{"www." + zone, "NOERROR"}, {"nothere." + zone, "NXDOMAIN"}} {
			out := delv(t, srv.DNSAddr, anchors, zone, q.name, dns.TypeA)
			if !strings.Contains(out, "fully validated") {
				t.Errorf("%s: delv %s A (%s): not fully validated:\n%s", step.name, q.name, q.rcode, out)
			}
		}
		rcode, types := denialTypes(t, srv.DNSAddr, "nothere."+zone, dns.TypeA)
		if rcode != dns.RcodeNameError || !types[step.proof] || types[step.other] {
			t.Errorf("%s: NXDOMAIN answer %s with authority types %v, want %s proofs only", step.name,
				dns.RcodeToString[rcode], types, dns.TypeToString[step.proof])
		}
	}
	proxy.Reset()
	if _, err := p.SetKeys(ctx(t), z.ID, keys, provider.Denial{}); err != nil {
		t.Fatal(err)
	}
	if c := proxy.Counts(); c.Requests != 2 {
		t.Errorf("SetKeys with everything in place sent %d requests, want 2 reads", c.Requests)
	}
	other := newKey(t, zone, dnssec.RoleKSK, dnssec.Active)
	if out := delv(t, srv.DNSAddr, delvAnchors(t, other), zone, "www."+zone, dns.TypeA); strings.Contains(out, "fully validated") {
		t.Errorf("delv validates under an anchor of a key the zone does not hold:\n%s", out)
	}
}

// TestSetKeys_RollsKeysAndNeverQuotesThem: SetKeys turns the zone's cryptokeys into exactly the
// keys given (a new ZSK published, not signing; then the old one removed), so that the DNSKEY
// RRset PowerDNS answers holds their tags; an empty key set leaves the zone unsigned; and a key
// PowerDNS refuses gives an error that names the request but quotes no private key.
func TestSetKeys_RollsKeysAndNeverQuotesThem(t *testing.T) {
	srv := startPDNS(t)
	p := newProvider(t, srv, srv.Key)
	const zone = "roll.pdns.test."
	z, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "roll.pdns.test", CallerReference: "roll"})
	if err != nil {
		t.Fatal(err)
	}
	csk := newKey(t, zone, dnssec.RoleCSK, dnssec.Active)
	zskOld, zskNew := newKey(t, zone, dnssec.RoleZSK, dnssec.Active), newKey(t, zone, dnssec.RoleZSK, dnssec.Published)
	for _, step := range []struct {
		name string
		keys []dnssec.Key
	}{
		{"CSK", []dnssec.Key{csk}},
		{"CSK and ZSK", []dnssec.Key{csk, zskOld}},
		{"a new ZSK published", []dnssec.Key{csk, zskOld, zskNew}},
		{"the old ZSK withdrawn", []dnssec.Key{csk, zskNew}},
		{"unsigned", nil},
	} {
		if _, err := p.SetKeys(ctx(t), z.ID, signingKeys(step.keys), provider.Denial{}); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		var want []string
		for _, k := range step.keys {
			want = append(want, fmt.Sprint(k.Tag()))
		}
		if got := dnskeyTags(t, srv.DNSAddr, zone); strings.Join(got, " ") != strings.Join(slices.Sorted(slices.Values(want)), " ") {
			t.Errorf("%s: DNSKEY tags %v, want %v", step.name, got, slices.Sorted(slices.Values(want)))
		}
	}
	bad := signingKeys([]dnssec.Key{csk})
	bad[0].PrivateKey = strings.Replace(bad[0].PrivateKey, "Algorithm: 13", "Algorithm: 99", 1)
	_, err = p.SetKeys(ctx(t), z.ID, bad, provider.Denial{})
	if err == nil {
		t.Fatal("SetKeys of a key of an unknown algorithm: no error")
	}
	priv := strings.TrimSpace(strings.SplitAfter(bad[0].PrivateKey, "PrivateKey: ")[1])
	if strings.Contains(err.Error(), priv) || strings.Contains(fmt.Sprintf("%v %+v %#v", bad, bad, bad), priv) {
		t.Errorf("the error or the key's print quotes the private key: %v", err)
	}
}

// dnskeyTags are the tags of the DNSKEY RRset addr answers for zone, sorted.
func dnskeyTags(t *testing.T, addr, zone string) []string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(zone, dns.TypeDNSKEY)
	m.SetEdns0(4096, true)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, rr := range r.Answer {
		if k, ok := rr.(*dns.DNSKEY); ok {
			tags = append(tags, fmt.Sprint(k.KeyTag()))
		}
	}
	slices.Sort(tags)
	return tags
}
