package google

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	mdns "github.com/miekg/dns"
	dns "google.golang.org/api/dns/v1"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

var _ provider.ManagedSigner = (*Provider)(nil)

// cloudAlgorithms are the spec's algorithms Cloud DNS signs with, by its DnsKeySpec names, and
// their key lengths (Cloud DNS API, ManagedZoneDnsSecConfig.defaultKeySpecs).
var cloudAlgorithms = map[string]struct {
	name   string
	length int64
}{"ECDSAP256SHA256": {"ecdsap256sha256", 256}, "RSASHA256": {"rsasha256", 2048}}

// SigningSupported implements provider.ManagedSigner: Cloud DNS signs with a key-signing key
// and a zone-signing key it holds (scheme KSKZSK), ECDSAP256SHA256 or RSASHA256, and denies
// with NSEC or NSEC3 with its own NSEC3 parameters (Cloud DNS API, ManagedZoneDnsSecConfig).
func (p *Provider) SigningSupported(sp provider.SigningParams) error {
	var why []string
	if _, ok := cloudAlgorithms[sp.Algorithm]; !ok && sp.Algorithm != "" {
		why = append(why, fmt.Sprintf("Cloud DNS signs with ECDSAP256SHA256 or RSASHA256, not %s", sp.Algorithm))
	}
	if sp.Scheme != "" && sp.Scheme != "KSKZSK" {
		why = append(why, fmt.Sprintf("Cloud DNS signs with a KSK and a ZSK (keys.scheme: KSKZSK), not %s", sp.Scheme))
	}
	switch {
	case sp.Denial != "" && sp.Denial != "NSEC" && sp.Denial != "NSEC3":
		why = append(why, fmt.Sprintf("Cloud DNS denies with NSEC or NSEC3, not %s", sp.Denial))
	case sp.NSEC3Iterations != 0 || sp.NSEC3Salt != "":
		why = append(why, "Cloud DNS chooses its NSEC3 iterations and salt: leave denial.nsec3 out")
	}
	return provider.NotCapable(why)
}

// EnableSigning implements provider.ManagedSigner: managedZones.patch with dnssecConfig state
// "on", the denial (nonExistence) and a key-signing and a zone-signing key spec of the
// algorithm; nothing when the zone's state is "on" already.
func (p *Provider) EnableSigning(ctx context.Context, zoneID string, sp provider.SigningParams) error {
	if err := p.SigningSupported(sp); err != nil {
		return err
	}
	mz, err := p.getRaw(ctx, zoneID)
	if err != nil {
		return err
	}
	if mz.DnssecConfig != nil && mz.DnssecConfig.State == "on" {
		return nil
	}
	alg := cloudAlgorithms[sp.Algorithm]
	if sp.Algorithm == "" {
		alg = cloudAlgorithms["ECDSAP256SHA256"]
	}
	cfg := &dns.ManagedZoneDnsSecConfig{State: "on", NonExistence: strings.ToLower(sp.Denial), DefaultKeySpecs: []*dns.DnsKeySpec{
		{KeyType: "keySigning", Algorithm: alg.name, KeyLength: alg.length, Kind: "dns#dnsKeySpec"},
		{KeyType: "zoneSigning", Algorithm: alg.name, KeyLength: alg.length, Kind: "dns#dnsKeySpec"},
	}}
	if cfg.NonExistence == "" {
		cfg.NonExistence = "nsec"
	}
	return p.patchDNSSEC(ctx, mz.Name, cfg)
}

// DisableSigning implements provider.ManagedSigner: dnssecConfig state "off".
func (p *Provider) DisableSigning(ctx context.Context, zoneID string) error {
	mz, err := p.getRaw(ctx, zoneID)
	if err != nil {
		return err
	}
	if mz.DnssecConfig == nil || mz.DnssecConfig.State == "" || mz.DnssecConfig.State == "off" {
		return nil
	}
	return p.patchDNSSEC(ctx, mz.Name, &dns.ManagedZoneDnsSecConfig{State: "off"})
}

func (p *Provider) patchDNSSEC(ctx context.Context, zone string, cfg *dns.ManagedZoneDnsSecConfig) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	_, err := p.svc.ManagedZones.Patch(p.project, zone, &dns.ManagedZone{DnssecConfig: cfg}).Context(ctx).Do()
	return mapErr("managedZones.patch", err)
}

// SigningState implements provider.ManagedSigner: state "on" with an active key-signing key
// (dnsKeys.list) is SigningOn, with the SHA-256 DS of every active key-signing key from the
// digests Cloud DNS gives; "on" without one, and "transfer", SigningPending; else SigningOff.
// Cloud DNS reports no signing failure of its own.
func (p *Provider) SigningState(ctx context.Context, zoneID string) (provider.SigningState, error) {
	mz, err := p.getRaw(ctx, zoneID)
	if err != nil {
		return provider.SigningState{}, err
	}
	state := ""
	if mz.DnssecConfig != nil {
		state = mz.DnssecConfig.State
	}
	switch state {
	case "", "off":
		return provider.SigningState{Phase: provider.SigningOff}, nil
	case "on":
	default:
		return provider.SigningState{Phase: provider.SigningPending, Message: "dnssecConfig.state is " + state}, nil
	}
	keys, err := p.dnsKeys(ctx, mz.Name)
	if err != nil {
		return provider.SigningState{}, err
	}
	st, err := keyState(mz.DnsName, keys)
	if err != nil {
		return provider.SigningState{}, err
	}
	if len(st.DS) > 0 {
		st.Phase = provider.SigningOn
	} else {
		st.Phase, st.Message = provider.SigningPending, "no active key-signing key yet"
	}
	return st, nil
}

// dnsKeys lists the zone's keys with their SHA-256 digests, every page.
func (p *Provider) dnsKeys(ctx context.Context, zone string) ([]*dns.DnsKey, error) {
	call := p.svc.DnsKeys.List(p.project, zone).DigestType("sha256")
	return pages(ctx, p.timeout, "dnsKeys.list", func(ctx context.Context, token string) ([]*dns.DnsKey, string, error) {
		r, err := call.PageToken(token).Context(ctx).Do()
		if err != nil {
			return nil, "", err
		}
		return r.DnsKeys, r.NextPageToken, nil
	})
}

// keyState is the DNSKEY of every key and the DS of every active key-signing key of zone. Pure.
func keyState(zone string, keys []*dns.DnsKey) (provider.SigningState, error) {
	var st provider.SigningState
	owner := dnswire.Fqdn(zone)
	for _, k := range keys {
		alg, ok := mdns.StringToAlgorithm[strings.ToUpper(k.Algorithm)]
		if !ok {
			return st, fmt.Errorf("clouddns dnsKeys.list: key %d: unknown algorithm %q", k.KeyTag, k.Algorithm)
		}
		if _, err := base64.StdEncoding.DecodeString(k.PublicKey); err != nil {
			return st, fmt.Errorf("clouddns dnsKeys.list: key %d: public key is not base64", k.KeyTag)
		}
		key := &mdns.DNSKEY{Hdr: mdns.RR_Header{Name: owner, Rrtype: mdns.TypeDNSKEY, Class: mdns.ClassINET},
			Flags: mdns.ZONE, Protocol: 3, Algorithm: alg, PublicKey: k.PublicKey}
		if k.Type == "keySigning" {
			key.Flags |= mdns.SEP
		}
		st.DNSKEYs = append(st.DNSKEYs, key)
		if k.Type != "keySigning" || !k.IsActive {
			continue
		}
		for _, d := range k.Digests {
			if d.Type != "sha256" {
				continue
			}
			st.DS = append(st.DS, &mdns.DS{Hdr: mdns.RR_Header{Name: owner, Rrtype: mdns.TypeDS, Class: mdns.ClassINET},
				KeyTag: uint16(k.KeyTag), Algorithm: alg, DigestType: mdns.SHA256, Digest: strings.ToUpper(d.Digest)})
		}
	}
	return st, nil
}
