package dnszone

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
