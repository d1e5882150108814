package dnszone

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// errServerSignsNot: the zone's server answers no DNSKEY set: it does not sign the zone.
var errServerSignsNot = errors.New("the zone's server answers no DNSKEY set")

// serverSigned reports a zone of a provider whose own server signs it (RFC 2136, webhook:
// provider.Resolved.SignedByServer; docs/dnssec.md, "RFC 2136 and webhook zones"): its DNSKEY
// set is read over DNS from every one of the zone's name servers, the DS (SHA-256) of each key
// with flags 257 is status.dnssec.ds, which the parent link publishes, and Secure follows what
// the parent's servers answer as for a zone dnsplane signs. A server that answers no DNSKEY set
// gives NotSupported: dnsplane signs no zone of this provider itself.
func (r *Reconciler) serverSigned(ctx context.Context, z *dnsv1.DNSZone, resolved provider.Resolved) (time.Duration, error) {
	servers := signedZoneServers(z, resolved)
	keys, err := serverKeySet(ctx, servers, z.Spec.Zone)
	poll := cmp.Or(r.SOAPollInterval, maxRolloverWake)
	switch {
	case errors.Is(err, errServerSignsNot):
		r.setSecure(z, dnsv1.ReasonNotSupported, fmt.Sprintf("the provider of Secret %q does not sign zones, and the zone's server "+
			"does not sign it (%v): sign it there (BIND's dnssec-policy), or use the embedded server (docs/dnssec.md)", z.Spec.ProviderRef.Name, err))
		z.Status.DNSSEC = nil
		return maxRolloverWake, nil // a server that starts signing is seen at the next look
	case err != nil:
		r.setSecure(z, dnsv1.ReasonSigning, fmt.Sprintf("waiting for every name server of the zone to answer the DNSKEY set its server signs: %v", err))
		return poll, nil
	}
	z.Status.DNSSEC = serverKeyStatus(keys)
	ds := strings.Join(z.Status.DNSSEC.DS, ", ")
	parents, linked := r.parentServers(ctx, z)
	if !linked {
		r.setSecure(z, dnsv1.ReasonDSPending, fmt.Sprintf("the zone's server signs it with keys %s; its parent is not a DNSZone dnsplane links: "+
			"give the parent's registrar or operator the DS set %s (status.dnssec.ds)", serverKeyList(keys), ds))
		return 0, nil
	}
	var want []dns.RR
	for _, s := range z.Status.DNSSEC.DS {
		if rr, err := dns.NewRR(s); err == nil && rr != nil {
			want = append(want, rr)
		}
	}
	if err := dsServed(ctx, parents, z.Spec.Zone, want); err != nil {
		r.setSecure(z, dnsv1.ReasonDSPending, fmt.Sprintf("the zone's server signs it with keys %s; waiting for every parent name server "+
			"to answer the DS set %s: %v", serverKeyList(keys), ds, err))
		return poll, nil
	}
	for _, s := range servers {
		if err := chainVerifies(ctx, parents[0], s, z.Spec.Zone); err != nil {
			reason := dnsv1.ReasonDSPending
			if errors.Is(err, errChainBroken) {
				reason = dnsv1.ReasonChainBroken
			}
			r.setSecure(z, reason, err.Error())
			return poll, nil
		}
	}
	r.setSecure(z, dnsv1.ReasonSecure, fmt.Sprintf("every name server answers the keys %s its server signs with, every parent name server "+
		"the DS set %s, and the chain from it to the SOA verifies", serverKeyList(keys), ds))
	return 0, nil
}

// signedZoneServers are the name servers (host:port) asked for a server-signed zone's keys: the
// provider's ServedBy, else its DNS address, else the zone's name servers on port 53.
func signedZoneServers(z *dnsv1.DNSZone, resolved provider.Resolved) []string {
	if len(resolved.ServedBy) > 0 {
		return resolved.ServedBy
	}
	if resolved.DNSAddress != "" {
		return []string{resolved.DNSAddress}
	}
	var out []string
	for _, ns := range z.Status.NameServers {
		out = append(out, strings.TrimSuffix(ns, ".")+":53")
	}
	return out
}

// serverKeySet asks every server for zone's DNSKEY set with DO and returns it when every one
// answers the same key tags, signed by a key with flags 257 (a KSK or CSK) whose RRSIG over it
// verifies: errServerSignsNot when a server answers none.
func serverKeySet(ctx context.Context, servers []string, zone string) ([]*dns.DNSKEY, error) {
	if len(servers) == 0 {
		return nil, errors.New("no name server to ask")
	}
	var first []*dns.DNSKEY
	for i, s := range servers {
		answer, err := ask(ctx, s, zone, dns.TypeDNSKEY)
		if err != nil {
			return nil, fmt.Errorf("name server %s: %w", s, err)
		}
		set, sigs := split(answer, dns.TypeDNSKEY)
		if len(set) == 0 {
			return nil, fmt.Errorf("%w (name server %s)", errServerSignsNot, s)
		}
		var keys []*dns.DNSKEY
		signed := false
		for _, rr := range set {
			k := rr.(*dns.DNSKEY)
			keys = append(keys, k)
			signed = signed || (k.Flags == 257 && signedBy(sigs, set, k))
		}
		if !signed {
			return nil, fmt.Errorf("name server %s: no key with flags 257 has a valid RRSIG over the DNSKEY set", s)
		}
		if i == 0 {
			first = keys
		} else if !slices.Equal(keyTags(first), keyTags(keys)) {
			return nil, fmt.Errorf("name server %s answers DNSKEY tags %v, %s %v", s, keyTags(keys), servers[0], keyTags(first))
		}
	}
	return first, nil
}

// keyTags are the tags of keys, sorted.
func keyTags(keys []*dns.DNSKEY) []uint16 {
	out := make([]uint16, 0, len(keys))
	for _, k := range keys {
		out = append(out, k.KeyTag())
	}
	slices.Sort(out)
	return out
}

// serverKeyStatus is status.dnssec of a server-signed zone's DNSKEY set: each key by tag, a KSK
// (flags 257) or a ZSK, Active; the DS (SHA-256, TTL dsTTL) of each KSK. Pure.
func serverKeyStatus(keys []*dns.DNSKEY) *dnsv1.DNSSECStatus {
	st := &dnsv1.DNSSECStatus{}
	for _, k := range keys {
		role := "ZSK"
		if k.Flags == 257 {
			role = "KSK"
			ds := k.ToDS(dns.SHA256)
			ds.Hdr.Ttl = dsTTL
			st.DS = append(st.DS, ds.String())
		}
		st.Keys = append(st.Keys, dnsv1.DNSSECKeyStatus{Tag: int32(k.KeyTag()), Algorithm: dns.AlgorithmToString[k.Algorithm],
			Role: role, State: "Active"})
	}
	slices.Sort(st.DS)
	return st
}

// serverKeyList names a server-signed zone's keys by role and tag, such as "KSK 12345".
func serverKeyList(keys []*dns.DNSKEY) string {
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		role := "ZSK"
		if k.Flags == 257 {
			role = "KSK"
		}
		names = append(names, fmt.Sprintf("%s %d", role, k.KeyTag()))
	}
	return strings.Join(names, ", ")
}
