package pdns

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

var _ provider.KeySigner = (*Provider)(nil)

// apiCryptokey is a key of the cryptokeys API (PowerDNS HTTP API, "Cryptokey"). The list
// answers no private key; PrivateKey is only ever sent.
type apiCryptokey struct {
	ID         int    `json:"id,omitempty"`
	KeyType    string `json:"keytype,omitempty"`
	Active     bool   `json:"active"`
	Published  bool   `json:"published"`
	DNSKey     string `json:"dnskey,omitempty"`
	PrivateKey string `json:"privatekey,omitempty"`
}

// apiKeyState is the body of a cryptokey PUT.
type apiKeyState struct {
	Active    bool `json:"active"`
	Published bool `json:"published"`
}

// apiDenial is the part of a zone the denial is read from and written to.
type apiDenial struct {
	NSEC3Param  string     `json:"nsec3param"`
	NSEC3Narrow bool       `json:"nsec3narrow"`
	RRSets      []apiRRSet `json:"rrsets,omitempty"`
}

// keyOp is one cryptokeys request SetKeys sends.
type keyOp struct {
	method string
	path   string
	body   any
}

// SetKeys implements provider.KeySigner over the cryptokeys API: it lists the zone's
// cryptokeys, matches them to keys by DNSKEY (flags, algorithm and public key), imports the
// missing ones (POST with the private key, keytype, active and published), sets active and
// published where they differ (PUT), and deletes the ones keys does not name (DELETE), in that
// order: raises, then lowerings, then deletions. It then sets the zone's NSEC3PARAM (zone PUT,
// nsec3param, never narrow; "" for NSEC) and, when anything changed, rectifies the zone (PUT
// .../rectify). The DNSKEY TTL it reports is the zone SOA's MINIMUM, which PowerDNS serves the
// DNSKEY RRset with. Requests run under the provider's timeout; errors name the request and
// PowerDNS's message, never a key.
func (p *Provider) SetKeys(ctx context.Context, zoneID string, keys []provider.SigningKey, denial provider.Denial) (provider.SignedZone, error) {
	if zoneID == "" {
		return provider.SignedZone{}, fmt.Errorf("set keys: %w", provider.ErrZoneNotFound)
	}
	path := zonePath(zoneID) + "/cryptokeys"
	var have []apiCryptokey
	if err := p.do(ctx, http.MethodGet, path, nil, &have); err != nil {
		return provider.SignedZone{}, fmt.Errorf("set keys of %s: %w", zoneID, err)
	}
	ops, err := keyOps(path, have, keys)
	if err != nil {
		return provider.SignedZone{}, fmt.Errorf("set keys of %s: %w", zoneID, err)
	}
	for _, op := range ops {
		if err := p.do(ctx, op.method, op.path, op.body, nil); err != nil {
			return provider.SignedZone{}, fmt.Errorf("set keys of %s: %w", zoneID, err)
		}
	}
	changed, ttl, err := p.setDenial(ctx, zoneID, denial)
	if err != nil {
		return provider.SignedZone{}, fmt.Errorf("set keys of %s: %w", zoneID, err)
	}
	if changed || len(ops) > 0 {
		if err := p.do(ctx, http.MethodPut, zonePath(zoneID)+"/rectify", nil, nil); err != nil {
			return provider.SignedZone{}, fmt.Errorf("set keys of %s: %w", zoneID, err)
		}
	}
	return provider.SignedZone{DNSKEYTTL: ttl}, nil
}

// keyOps are the requests that turn the cryptokeys have into keys: imports and raises first,
// then lowerings, then deletions. Keys neither published nor active are not imported.
func keyOps(path string, have []apiCryptokey, keys []provider.SigningKey) ([]keyOp, error) {
	var raise, lower, del []keyOp
	matched := make([]bool, len(have))
	for _, k := range keys {
		if k.DNSKEY == nil {
			return nil, errors.New("a key without its DNSKEY")
		}
		i := matchKey(have, matched, k.DNSKEY)
		if i < 0 {
			if !k.Published && !k.Active {
				continue
			}
			kt, err := keyType(k.Role)
			if err != nil {
				return nil, fmt.Errorf("key %d: %w", k.DNSKEY.KeyTag(), err)
			}
			raise = append(raise, keyOp{http.MethodPost, path,
				apiCryptokey{KeyType: kt, Active: k.Active, Published: k.Published, PrivateKey: k.PrivateKey}})
			continue
		}
		matched[i] = true
		h := have[i]
		if h.Active == k.Active && h.Published == k.Published {
			continue
		}
		op := keyOp{http.MethodPut, path + "/" + strconv.Itoa(h.ID), apiKeyState{Active: k.Active, Published: k.Published}}
		if (k.Active && !h.Active) || (k.Published && !h.Published) {
			raise = append(raise, op)
		} else {
			lower = append(lower, op)
		}
	}
	for i, h := range have {
		if !matched[i] {
			del = append(del, keyOp{http.MethodDelete, path + "/" + strconv.Itoa(h.ID), nil})
		}
	}
	return append(append(raise, lower...), del...), nil
}

// matchKey is the index of the first cryptokey of have not matched yet whose DNSKEY has key's
// flags, algorithm and public key, or -1.
func matchKey(have []apiCryptokey, matched []bool, key *dns.DNSKEY) int {
	for i, h := range have {
		f := strings.Fields(h.DNSKey)
		if matched[i] || len(f) < 4 {
			continue
		}
		if f[0] == strconv.Itoa(int(key.Flags)) && f[2] == strconv.Itoa(int(key.Algorithm)) &&
			strings.Join(f[3:], "") == strings.ReplaceAll(key.PublicKey, " ", "") {
			return i
		}
	}
	return -1
}

// keyType is the cryptokeys keytype of a role.
func keyType(role string) (string, error) {
	switch role {
	case "KSK", "ZSK", "CSK":
		return strings.ToLower(role), nil
	}
	return "", fmt.Errorf("unknown role %q", role)
}

// setDenial reads the zone and sets its NSEC3PARAM to denial's when it differs (a zone PUT),
// reporting whether it did and the SOA's MINIMUM, the TTL PowerDNS serves the DNSKEY RRset
// with.
func (p *Provider) setDenial(ctx context.Context, zoneID string, denial provider.Denial) (bool, time.Duration, error) {
	var z apiDenial
	if err := p.do(ctx, http.MethodGet, zonePath(zoneID), nil, &z); err != nil {
		return false, 0, err
	}
	ttl := soaMinimum(zoneID, z.RRSets)
	want := nsec3Param(denial)
	if sameNSEC3Param(z.NSEC3Param, want) && !z.NSEC3Narrow {
		return false, ttl, nil
	}
	if err := p.do(ctx, http.MethodPut, zonePath(zoneID), apiDenial{NSEC3Param: want}, nil); err != nil {
		return false, 0, err
	}
	return true, ttl, nil
}

// nsec3Param is the NSEC3PARAM content of denial ("1 0 <iterations> <salt or ->"), "" for NSEC.
func nsec3Param(d provider.Denial) string {
	if d.NSEC3 == nil {
		return ""
	}
	salt := strings.ToLower(d.NSEC3.Salt)
	if salt == "" {
		salt = "-"
	}
	return fmt.Sprintf("1 0 %d %s", d.NSEC3.Iterations, salt)
}

// sameNSEC3Param compares two NSEC3PARAM contents field by field, case-insensitively.
func sameNSEC3Param(a, b string) bool {
	return strings.EqualFold(strings.Join(strings.Fields(a), " "), strings.Join(strings.Fields(b), " "))
}

// soaMinimum is the MINIMUM of the zone's SOA among rrsets, or 0.
func soaMinimum(zoneID string, rrsets []apiRRSet) time.Duration {
	for _, rs := range rrsets {
		if rs.Type != "SOA" || !strings.EqualFold(dnswire.Fqdn(rs.Name), dnswire.Fqdn(zoneID)) || len(rs.Records) == 0 {
			continue
		}
		rr, err := dns.NewRR(dnswire.Fqdn(zoneID) + " 0 IN SOA " + rs.Records[0].Content)
		if soa, ok := rr.(*dns.SOA); err == nil && ok {
			return time.Duration(soa.Minttl) * time.Second
		}
	}
	return 0
}
