package served

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Key is a DNSSEC key that signs a zone's SOA: its tag (RFC 4034 Appendix B) and its algorithm's
// mnemonic, such as 12345 and "ECDSAP256SHA256", as status.dnssec.keys names them.
type Key struct {
	Tag       uint16
	Algorithm string
}

// String is "12345/ECDSAP256SHA256".
func (k Key) String() string { return fmt.Sprintf("%d/%s", k.Tag, k.Algorithm) }

// SignedAsker asks one name server for a zone's SOA with the DO bit set (RFC 3225): its serial
// and the RRSIGs over the SOA in the answer. dnsclient.Client satisfies it.
type SignedAsker interface {
	SignedSerial(ctx context.Context, server, zone string) (uint32, []*dns.RRSIG, error)
}

// read asks server for zone's serial, dated when the query is sent. For a signed zone
// (Zone.Keys) whose asker can (SignedAsker), the query has the DO bit set and the reading says
// whether the SOA came signed by one of the zone's keys (Reading.Unsigned); else the serial
// alone is asked, as for an unsigned zone.
func (t *Tracker) read(ctx context.Context, zone Zone, server string) Reading {
	ctx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
	defer cancel()
	r := Reading{At: t.now()}
	var err error
	a := t.asker(zone)
	if sa, ok := a.(SignedAsker); ok && len(zone.Keys) > 0 {
		var sigs []*dns.RRSIG
		r.Serial, sigs, err = sa.SignedSerial(ctx, server, zone.Name)
		if err == nil {
			r.Unsigned = Unsigned(sigs, zone.Name, zone.Keys, r.At)
		}
	} else {
		r.Serial, err = a.Serial(ctx, server, zone.Name)
	}
	t.countQuery(err)
	if err != nil {
		r.Serial, r.Err = 0, err.Error()
	}
	return r
}

// Unsigned says why sigs, the RRSIGs over zone's SOA in one server's answer, do not show the
// SOA signed by one of keys at now; "" when one RRSIG is by the zone (its signer name), with a
// key of keys (tag and algorithm), and valid at now (between its inception and expiration,
// RFC 4034 §3.1.5). It does not verify the signature's bytes: the check holds the keys' tags,
// not their public halves, and asks which keys a server signs with, not whether a validator
// trusts them (the Secure condition's verification).
func Unsigned(sigs []*dns.RRSIG, zone string, keys []Key, now time.Time) string {
	if len(sigs) == 0 {
		return "no RRSIG over the SOA"
	}
	why := make([]string, 0, len(sigs))
	for _, s := range sigs {
		k := Key{Tag: s.KeyTag, Algorithm: dns.AlgorithmToString[s.Algorithm]}
		switch {
		case !strings.EqualFold(dns.Fqdn(s.SignerName), dns.Fqdn(zone)):
			why = append(why, fmt.Sprintf("an RRSIG by %s", s.SignerName))
		case !slices.Contains(keys, k):
			why = append(why, fmt.Sprintf("an RRSIG by key %s, not an active key of the zone (%s)", k, keyNames(keys)))
		case !s.ValidityPeriod(now):
			why = append(why, fmt.Sprintf("an RRSIG by key %s valid from %s to %s only", k,
				dns.TimeToString(s.Inception), dns.TimeToString(s.Expiration)))
		default:
			return ""
		}
	}
	return strings.Join(why, "; ")
}

// keyNames names keys for a message: "12345/ECDSAP256SHA256, 23456/ECDSAP256SHA256".
func keyNames(keys []Key) string {
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		names = append(names, k.String())
	}
	return strings.Join(names, ", ")
}
