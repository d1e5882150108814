package dnssec

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// testPolicy returns a policy for zone with an Active KSK, an Active ZSK, a Published ZSK and a
// Retired KSK (ECDSA P-256).
func testPolicy(t *testing.T, zone string, params *NSEC3Params) Policy {
	t.Helper()
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	ks := KeySet{Zone: zone}
	for _, r := range []struct {
		role  Role
		state State
	}{{RoleKSK, Active}, {RoleZSK, Active}, {RoleZSK, Published}, {RoleKSK, Retired}} {
		k, err := Generate(zone, dns.ECDSAP256SHA256, r.role, r.state, now)
		if err != nil {
			t.Fatal(err)
		}
		ks.Keys = append(ks.Keys, k)
	}
	return Policy{Keys: ks, NSEC3: params, Validity: 10 * 24 * time.Hour, Refresh: 24 * time.Hour}
}

// verifySigs checks that sigs are valid at now for rrset under the zone's DNSKEYs, and returns
// the tags of the keys that made them.
func verifySigs(t *testing.T, p Policy, rrset, sigs []dns.RR, now time.Time) []uint16 {
	t.Helper()
	var tags []uint16
	for _, s := range sigs {
		sig := s.(*dns.RRSIG)
		var key *dns.DNSKEY
		for _, k := range p.Keys.Keys {
			if k.Tag() == sig.KeyTag {
				key = k.DNSKEY
			}
		}
		if key == nil {
			t.Fatalf("RRSIG by unknown key %d", sig.KeyTag)
		}
		if err := sig.Verify(key, rrset); err != nil {
			t.Fatalf("RRSIG %v over %v does not verify: %v", sig, rrset, err)
		}
		if !sig.ValidityPeriod(now) {
			t.Fatalf("RRSIG %v not valid at %s", sig, now)
		}
		tags = append(tags, sig.KeyTag)
	}
	return tags
}

func TestPolicy_SignsEachRRsetWithTheActiveKeysOfItsRole(t *testing.T) {
	p := testPolicy(t, "example.test.", nil)
	now := time.Date(2026, 12, 8, 15, 30, 0, 0, time.UTC)
	ksk, zsk := p.Keys.Keys[0].Tag(), p.Keys.Keys[1].Tag()
	a, _ := dns.NewRR("www.example.test. 300 IN A 192.0.2.1")
	for _, c := range []struct {
		rrset []dns.RR
		want  uint16
	}{{[]dns.RR{a}, zsk}, {p.Keys.DNSKEYs(3600), ksk}} {
		sigs, err := p.Sign(c.rrset, now)
		if err != nil {
			t.Fatal(err)
		}
		if tags := verifySigs(t, p, c.rrset, sigs, now); !slices.Equal(tags, []uint16{c.want}) {
			t.Fatalf("%s signed by %v, want [%d]", dns.TypeToString[c.rrset[0].Header().Rrtype], tags, c.want)
		}
		sig := sigs[0].(*dns.RRSIG)
		start := time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)
		if sig.Inception != uint32(start.Add(-Skew).Unix()) || sig.Expiration != uint32(start.Add(p.Validity).Unix()) {
			t.Fatalf("window %d..%d, want the period's start less %s .. plus %s", sig.Inception, sig.Expiration, Skew, p.Validity)
		}
	}
	wild, _ := dns.NewRR("host.example.test. 300 IN A 192.0.2.1")
	sigs, err := p.SignAs([]dns.RR{wild}, "*.example.test.", now)
	if err != nil {
		t.Fatal(err)
	}
	if s := sigs[0].(*dns.RRSIG); s.Hdr.Name != "host.example.test." || s.Labels != 2 {
		t.Fatalf("wildcard RRSIG %v: want owner host.example.test. with 2 labels", s)
	}
	verifySigs(t, p, []dns.RR{wild}, sigs, now)
}

// zoneModel is a generated zone: names with their types, delegations among them.
type zoneModel struct {
	origin string
	names  map[string][]uint16
}

var labels = []string{"a", "b", "c", "*", "www", "z", "0", "mail", "x-y"}

func genZone(r *rand.Rand, origin string) zoneModel {
	m := zoneModel{origin: origin, names: map[string][]uint16{origin: {dns.TypeNS, dns.TypeSOA}}}
	for range 1 + r.IntN(12) {
		name := origin
		for range 1 + r.IntN(3) {
			name = labels[r.IntN(len(labels))] + "." + name
		}
		if m.belowCut(name) || strings.Contains(name[1:], "*") {
			continue
		}
		switch r.IntN(5) {
		case 0: // a delegation, with or without DS; nothing below it, not a wildcard
			if m.hasBelow(name) || strings.HasPrefix(name, "*.") {
				continue
			}
			m.names[name] = []uint16{dns.TypeNS}
			if r.IntN(2) == 0 {
				m.names[name] = []uint16{dns.TypeNS, dns.TypeDS}
			}
		case 1:
			m.names[name] = []uint16{dns.TypeTXT}
		default:
			m.names[name] = []uint16{dns.TypeA, dns.TypeAAAA}
		}
	}
	return m
}

func (m zoneModel) belowCut(name string) bool {
	for n, ts := range m.names {
		if n != m.origin && slices.Contains(ts, dns.TypeNS) && dns.IsSubDomain(n, name) {
			return true
		}
	}
	return false
}

func (m zoneModel) hasBelow(name string) bool {
	for n := range m.names {
		if n != name && dns.IsSubDomain(name, n) {
			return true
		}
	}
	return false
}

// exists says whether name is a name of the zone, or an empty non-terminal above one.
func (m zoneModel) exists(name string) bool {
	for n := range m.names {
		if dns.IsSubDomain(name, n) {
			return true
		}
	}
	return false
}

func (m zoneModel) ce(qname string) string {
	labels := dns.SplitDomainName(qname)
	for i := 1; i < len(labels); i++ {
		if p := dns.Fqdn(strings.Join(labels[i:], ".")); m.exists(p) {
			return p
		}
	}
	return m.origin
}

// TestChain_EveryProofVerifies generates zones and names and checks, with an NSEC/NSEC3
// verifier written from RFC 4035 §5.4 and RFC 5155 §8 over miekg/dns's RRSIG.Verify and
// NSEC3.Cover/Match, that each proof proves what it claims and that its signatures verify.
func TestChain_EveryProofVerifies(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	now := time.Date(2026, 12, 8, 15, 30, 0, 0, time.UTC)
	for _, params := range []*NSEC3Params{nil, {}, {Iterations: 2, Salt: "aabbccdd"}} {
		p := testPolicy(t, "example.test.", params)
		for iter := range 40 {
			m := genZone(r, "example.test.")
			c := NewChain(m.origin, m.names, params, 300)
			for range 20 {
				name := m.origin
				for range 1 + r.IntN(4) {
					name = labels[r.IntN(len(labels)-1)+1-btoi(r.IntN(8) == 0)] + "." + name
				}
				if m.belowCut(name) && !m.exists(name) {
					continue
				}
				checkProof(t, fmt.Sprintf("zone %d (%v) %v name %s", iter, params, m.names, name), p, c, m, name, now)
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkProof asks the chain for the proof the model calls for at name and verifies it.
func checkProof(t *testing.T, what string, p Policy, c *Chain, m zoneModel, name string, now time.Time) {
	t.Helper()
	v := verifier{t: t, what: what, params: p.NSEC3, origin: m.origin}
	var proof []dns.RR
	ce := m.ce(name)
	_, hasWild := m.names["*."+ce]
	switch {
	case m.exists(name):
		proof = c.NoData(name)
		v.nodata(proof, name, dns.TypeMX)
	case hasWild:
		proof = c.Wildcard(name, ce)
		v.nextCloserAbsent(proof, name, ce) // the RRSIG's labels name the closest encloser
		nd := c.WildcardNoData(name, ce)
		v.noCloser(nd, name, ce)
		v.nodata(nd, "*."+ce, dns.TypeMX)
		proof = append(proof, nd...)
	default:
		proof = c.NXDomain(name)
		v.noCloser(proof, name, ce)
		v.absent(proof, "*."+ce)
	}
	for _, rr := range proof {
		if rr.Header().Ttl != 300 {
			t.Fatalf("%s: %v has not the chain's TTL", what, rr)
		}
		sigs, err := p.Sign([]dns.RR{rr}, now)
		if err != nil {
			t.Fatal(err)
		}
		verifySigs(t, p, []dns.RR{rr}, sigs, now)
	}
}

// verifier checks denial proofs as a validator does.
type verifier struct {
	t      *testing.T
	what   string
	params *NSEC3Params
	origin string
}

// canonicalLess compares names in canonical order: label by label from the root, lowercase.
func canonicalLess(a, b string) bool {
	la, lb := dns.SplitDomainName(strings.ToLower(a)), dns.SplitDomainName(strings.ToLower(b))
	slices.Reverse(la)
	slices.Reverse(lb)
	return slices.Compare(la, lb) < 0
}

// covers says whether an NSEC proves name absent (RFC 4035 §5.4).
func covers(n *dns.NSEC, name string) bool {
	owner, next := n.Hdr.Name, n.NextDomain
	if canonicalLess(owner, next) {
		return canonicalLess(owner, name) && canonicalLess(name, next)
	}
	return canonicalLess(owner, name) || canonicalLess(name, next) // the last NSEC
}

func (v verifier) absent(proof []dns.RR, name string) {
	for _, rr := range proof {
		switch x := rr.(type) {
		case *dns.NSEC:
			if covers(x, name) {
				return
			}
		case *dns.NSEC3:
			if x.Cover(name) {
				return
			}
		}
	}
	v.t.Fatalf("%s: no record of %v proves %s absent", v.what, proof, name)
}

func (v verifier) match(proof []dns.RR, name string) []uint16 {
	for _, rr := range proof {
		switch x := rr.(type) {
		case *dns.NSEC:
			if strings.EqualFold(x.Hdr.Name, name) {
				return x.TypeBitMap
			}
		case *dns.NSEC3:
			if x.Match(name) {
				return x.TypeBitMap
			}
		}
	}
	v.t.Fatalf("%s: no record of %v matches %s", v.what, proof, name)
	return nil
}

// noCloser checks that name does not exist and that ce is its closest encloser: with NSEC a
// record covering name whose owner and next name are no deeper than ce's descendants; with
// NSEC3 the closest encloser proof (RFC 5155 §8.3).
func (v verifier) noCloser(proof []dns.RR, name, ce string) {
	if v.params == nil {
		v.absent(proof, name)
		return
	}
	types := v.match(proof, ce)
	if slices.Contains(types, dns.TypeDNAME) || slices.Contains(types, dns.TypeNS) && !slices.Contains(types, dns.TypeSOA) {
		v.t.Fatalf("%s: closest encloser %s is a delegation (%v)", v.what, ce, types)
	}
	v.nextCloserAbsent(proof, name, ce)
}

// nextCloserAbsent checks that the name one label below ce on the way to name is absent.
func (v verifier) nextCloserAbsent(proof []dns.RR, name, ce string) {
	n := dns.CountLabel(name) - dns.CountLabel(ce) - 1
	v.absent(proof, name[dns.Split(name)[n]:])
}

// nodata checks that name exists without type qtype or a CNAME: its NSEC or NSEC3, or under
// NSEC, for an empty non-terminal, a covering NSEC whose next name is below name.
func (v verifier) nodata(proof []dns.RR, name string, qtype uint16) {
	if v.params == nil && !slices.ContainsFunc(proof, func(rr dns.RR) bool { return strings.EqualFold(rr.Header().Name, name) }) {
		for _, rr := range proof {
			if n := rr.(*dns.NSEC); covers(n, name) && dns.IsSubDomain(name, n.NextDomain) {
				return
			}
		}
		v.t.Fatalf("%s: %v does not prove the empty non-terminal %s", v.what, proof, name)
	}
	types := v.match(proof, name)
	if slices.Contains(types, qtype) || slices.Contains(types, dns.TypeCNAME) {
		v.t.Fatalf("%s: %v lists %s", v.what, types, dns.TypeToString[qtype])
	}
	if name == v.origin && (!slices.Contains(types, dns.TypeDNSKEY) || !slices.Contains(types, dns.TypeSOA)) {
		v.t.Fatalf("%s: apex bitmap %v lacks DNSKEY or SOA", v.what, types)
	}
}

func TestPolicy_CheckRefusesWhatCannotSign(t *testing.T) {
	ok := testPolicy(t, "example.test.", &NSEC3Params{Salt: "aabb"})
	if err := ok.Check(); err != nil {
		t.Fatalf("a KSK and a ZSK: %v", err)
	}
	noZSK := ok
	noZSK.Keys.Keys = ok.Keys.Keys[:1]
	badSalt := ok
	badSalt.NSEC3 = &NSEC3Params{Salt: "xyz"}
	noSigner := ok
	noSigner.Keys.Keys = slices.Clone(ok.Keys.Keys)
	noSigner.Keys.Keys[1].Private = "not a key"
	for name, p := range map[string]Policy{"no ZSK": noZSK, "bad salt": badSalt, "no signer": noSigner} {
		if err := p.Check(); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
}
