package dnszone

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// keyQueryTimeout bounds one DNSKEY query to one name server.
const keyQueryTimeout = 3 * time.Second

// keysServed says whether every server (host:port) answers the DNSKEY RRset of ks: the same key
// tags (the keys of ks but the Generated ones), with a valid RRSIG by each key of ks that signs
// the DNSKEY RRset. The error names the first server that does not, and why. No server: false.
func keysServed(ctx context.Context, servers []string, ks dnssec.KeySet) (bool, error) {
	if len(servers) == 0 {
		return false, errors.New("no name server to ask")
	}
	for _, s := range servers {
		if err := serverKeys(ctx, s, ks); err != nil {
			return false, fmt.Errorf("name server %s: %w", s, err)
		}
	}
	return true, nil
}

// serverKeys asks server for the zone's DNSKEY RRset with DO set (over TCP when the UDP answer is
// truncated) and checks it against ks.
func serverKeys(ctx context.Context, server string, ks dnssec.KeySet) error {
	ctx, cancel := context.WithTimeout(ctx, keyQueryTimeout)
	defer cancel()
	m := new(dns.Msg)
	m.SetQuestion(dnswire.Fqdn(ks.Zone), dns.TypeDNSKEY)
	m.SetEdns0(dns.DefaultMsgSize, true)
	resp, _, err := (&dns.Client{Net: "udp", UDPSize: dns.DefaultMsgSize}).ExchangeContext(ctx, m, server)
	if err == nil && resp.Truncated {
		resp, _, err = (&dns.Client{Net: "tcp"}).ExchangeContext(ctx, m, server)
	}
	if err != nil {
		return fmt.Errorf("DNSKEY query: %w", err)
	}
	if resp.Rcode != dns.RcodeSuccess {
		return fmt.Errorf("DNSKEY query: %s", dns.RcodeToString[resp.Rcode])
	}
	return checkKeyAnswer(resp.Answer, ks)
}

// checkKeyAnswer checks an answer to a DNSKEY query against ks: the DNSKEY tags are those of ks
// (Generated keys excepted), and each key that signs the DNSKEY RRset has a valid RRSIG over it.
func checkKeyAnswer(answer []dns.RR, ks dnssec.KeySet) error {
	var keys []dns.RR
	var sigs []*dns.RRSIG
	var got []uint16
	for _, rr := range answer {
		switch v := rr.(type) {
		case *dns.DNSKEY:
			keys = append(keys, v)
			got = append(got, v.KeyTag())
		case *dns.RRSIG:
			if v.TypeCovered == dns.TypeDNSKEY {
				sigs = append(sigs, v)
			}
		}
	}
	var want []uint16
	for _, rr := range ks.DNSKEYs(0) {
		want = append(want, rr.(*dns.DNSKEY).KeyTag())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("DNSKEY tags %v, want %v", got, want)
	}
	for _, k := range ks.Keys {
		if k.SignsKeys() && !signedBy(sigs, keys, k.DNSKEY) {
			return fmt.Errorf("no valid RRSIG of the DNSKEY RRset by key %d", k.Tag())
		}
	}
	return nil
}

// signedBy says whether one of sigs by key verifies rrset and is valid now.
func signedBy(sigs []*dns.RRSIG, rrset []dns.RR, key *dns.DNSKEY) bool {
	for _, s := range sigs {
		if s.KeyTag == key.KeyTag() && s.Algorithm == key.Algorithm && s.Verify(key, rrset) == nil && s.ValidityPeriod(time.Time{}) {
			return true
		}
	}
	return false
}

// dsServed says whether every server (host:port) of the parent zone answers exactly the DS set
// want of zone (key tags, algorithms, digest types and digests). The error names the first
// server that does not, and why. No server, or no DS wanted: false.
func dsServed(ctx context.Context, servers []string, zone string, want []dns.RR) error {
	if len(servers) == 0 {
		return errors.New("no parent name server to ask")
	}
	if len(want) == 0 {
		return errors.New("no DS to look for")
	}
	for _, s := range servers {
		if err := serverDS(ctx, s, zone, want); err != nil {
			return fmt.Errorf("parent name server %s: %w", s, err)
		}
	}
	return nil
}

// serverDS asks server for zone's DS RRset and checks that it is exactly want.
func serverDS(ctx context.Context, server, zone string, want []dns.RR) error {
	answer, err := ask(ctx, server, zone, dns.TypeDS)
	if err != nil {
		return err
	}
	got, exp := dsKeys(answer), dsKeys(want)
	if !slices.Equal(got, exp) {
		return fmt.Errorf("DS %v, want %v", got, exp)
	}
	return nil
}

// ask asks server for name/qtype over TCP with DO set and returns the answer section.
func ask(ctx context.Context, server, name string, qtype uint16) ([]dns.RR, error) {
	ctx, cancel := context.WithTimeout(ctx, keyQueryTimeout)
	defer cancel()
	m := new(dns.Msg)
	m.SetQuestion(dnswire.Fqdn(name), qtype)
	m.SetEdns0(dns.DefaultMsgSize, true)
	resp, _, err := (&dns.Client{Net: "tcp"}).ExchangeContext(ctx, m, server)
	if err != nil {
		return nil, fmt.Errorf("%s query: %w", dns.TypeToString[qtype], err)
	}
	if resp.Rcode != dns.RcodeSuccess {
		return nil, fmt.Errorf("%s query: %s", dns.TypeToString[qtype], dns.RcodeToString[resp.Rcode])
	}
	return resp.Answer, nil
}

// errChainBroken: the parent's DS set matches no key that signs the zone's DNSKEY set.
var errChainBroken = errors.New("chain broken")

// chainVerifies checks the chain from the parent's DS to the zone's SOA as a validator
// follows it: the DS set parentServer answers matches a DNSKEY that server answers and whose
// RRSIG over the DNSKEY set verifies (else errChainBroken), and the SOA's RRSIG verifies with a
// zone key of that DNSKEY set.
func chainVerifies(ctx context.Context, parentServer, server, zone string) error {
	ds, err := ask(ctx, parentServer, zone, dns.TypeDS)
	if err != nil {
		return fmt.Errorf("parent name server %s: %w", parentServer, err)
	}
	if len(dsKeys(ds)) == 0 {
		return fmt.Errorf("parent name server %s answers no DS", parentServer)
	}
	keysAns, err := ask(ctx, server, zone, dns.TypeDNSKEY)
	if err != nil {
		return fmt.Errorf("name server %s: %w", server, err)
	}
	keys, keySigs := split(keysAns, dns.TypeDNSKEY)
	if !slices.ContainsFunc(keys, func(rr dns.RR) bool {
		k := rr.(*dns.DNSKEY)
		return matchesDS(k, ds) && signedBy(keySigs, keys, k)
	}) {
		return fmt.Errorf("%w: the DS set %v at %s matches no key that signs the DNSKEY set of %s", errChainBroken, dsKeys(ds), parentServer, server)
	}
	soaAns, err := ask(ctx, server, zone, dns.TypeSOA)
	if err != nil {
		return fmt.Errorf("name server %s: %w", server, err)
	}
	soa, soaSigs := split(soaAns, dns.TypeSOA)
	if !slices.ContainsFunc(keys, func(rr dns.RR) bool { return signedBy(soaSigs, soa, rr.(*dns.DNSKEY)) }) {
		return fmt.Errorf("name server %s: no RRSIG of the SOA verifies with a key of its DNSKEY set", server)
	}
	return nil
}

// split returns the records of type qtype in answer and the RRSIGs that cover them.
func split(answer []dns.RR, qtype uint16) ([]dns.RR, []*dns.RRSIG) {
	var set []dns.RR
	var sigs []*dns.RRSIG
	for _, rr := range answer {
		if s, ok := rr.(*dns.RRSIG); ok && s.TypeCovered == qtype {
			sigs = append(sigs, s)
		} else if rr.Header().Rrtype == qtype {
			set = append(set, rr)
		}
	}
	return set, sigs
}

// matchesDS says whether one of the DS records ds is key's digest.
func matchesDS(key *dns.DNSKEY, ds []dns.RR) bool {
	for _, rr := range ds {
		d, ok := rr.(*dns.DS)
		if !ok {
			continue
		}
		if own := key.ToDS(d.DigestType); own != nil && own.KeyTag == d.KeyTag && strings.EqualFold(own.Digest, d.Digest) {
			return true
		}
	}
	return false
}

// dsKeys is each DS of rrs as "<tag> <alg> <digest type> <DIGEST>", sorted.
func dsKeys(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		if d, ok := rr.(*dns.DS); ok {
			out = append(out, fmt.Sprintf("%d %d %d %s", d.KeyTag, d.Algorithm, d.DigestType, strings.ToUpper(d.Digest)))
		}
	}
	slices.Sort(out)
	return out
}
