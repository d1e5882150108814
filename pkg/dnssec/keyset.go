package dnssec

import (
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// SecretKey is the key of the Secret's data entry that holds a zone's key set.
const SecretKey = "keyset.json"

// Role is what a key signs: a KSK the DNSKEY RRset, a ZSK every other RRset, a CSK both.
type Role string

// The key roles.
const (
	RoleCSK Role = "CSK"
	RoleKSK Role = "KSK"
	RoleZSK Role = "ZSK"
)

// State is where a key stands in its life.
type State string

// The key states. A Generated key is not in the DNSKEY RRset yet: a KSK whose DS is being
// introduced at the parent first (a double-DS rollover). A Published key is in the DNSKEY RRset but signs nothing yet (a ZSK before
// it takes over, a KSK whose DS is not yet at every parent server); an Active key signs; a
// Retired key is still in the DNSKEY RRset but signs nothing (a ZSK whose signatures may
// still be cached, a KSK whose DS is leaving the parent).
const (
	Generated State = "Generated"
	Published State = "Published"
	Active    State = "Active"
	Retired   State = "Retired"
)

// Key is one DNSSEC key of a zone with its private half.
type Key struct {
	Role    Role
	State   State
	Created time.Time
	// Since is when the key entered its State.
	Since   time.Time
	DNSKEY  *dns.DNSKEY
	Private crypto.PrivateKey
}

// Tag is the key's tag (RFC 4034 Appendix B).
func (k Key) Tag() uint16 { return k.DNSKEY.KeyTag() }

// SignsKeys says whether the key signs the DNSKEY RRset (and CDS, CDNSKEY).
func (k Key) SignsKeys() bool { return k.State == Active && (k.Role == RoleKSK || k.Role == RoleCSK) }

// SignsZone says whether the key signs the RRsets other than DNSKEY, CDS and CDNSKEY.
func (k Key) SignsZone() bool { return k.State == Active && (k.Role == RoleZSK || k.Role == RoleCSK) }

// KeySet is a zone's keys.
type KeySet struct {
	Zone string // the zone's origin, with its trailing dot
	Keys []Key
	// Rollover is the rollover in progress, nil when none.
	Rollover *Rollover
	// Unsigning is the turn-off in progress or done, nil while the zone is to be signed.
	Unsigning *Unsigning
}

// Algorithms by their names in the API.
var algorithms = map[string]uint8{
	"ECDSAP256SHA256": dns.ECDSAP256SHA256,
	"ED25519":         dns.ED25519,
	"RSASHA256":       dns.RSASHA256,
}

// Algorithm returns the DNSSEC algorithm number of an API algorithm name.
func Algorithm(name string) (uint8, error) {
	a, ok := algorithms[name]
	if !ok {
		return 0, fmt.Errorf("dnssec: unknown algorithm %q", name)
	}
	return a, nil
}

// Generate makes a new key for zone in the given role and state, created at now.
func Generate(zone string, alg uint8, role Role, state State, now time.Time) (Key, error) {
	k := &dns.DNSKEY{
		Hdr:       dns.RR_Header{Name: dnswire.Fqdn(zone), Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: 3600},
		Flags:     dns.ZONE,
		Protocol:  3,
		Algorithm: alg,
	}
	if role != RoleZSK {
		k.Flags |= dns.SEP
	}
	bits := 256
	if alg == dns.RSASHA256 {
		bits = 2048
	}
	priv, err := k.Generate(bits)
	if err != nil {
		return Key{}, fmt.Errorf("dnssec: generating a %s for %s: %w", role, zone, err)
	}
	return Key{Role: role, State: state, Created: now, Since: now, DNSKEY: k, Private: priv}, nil
}

// DNSKEYs returns the zone's DNSKEY RRset: every key in the set but the Generated ones, with
// ttl.
func (s KeySet) DNSKEYs(ttl uint32) []dns.RR {
	out := make([]dns.RR, 0, len(s.Keys))
	for _, k := range s.Keys {
		if k.State == Generated {
			continue
		}
		c := dns.Copy(k.DNSKEY).(*dns.DNSKEY)
		c.Hdr.Ttl = ttl
		out = append(out, c)
	}
	return out
}

// DS returns the DS records (SHA-256) of the set's key-signing keys in the given states, as the
// parent zone publishes them at the zone's owner name with ttl.
func (s KeySet) DS(ttl uint32, states ...State) []dns.RR {
	var out []dns.RR
	for _, k := range s.Keys {
		if k.Role == RoleZSK || !slices.Contains(states, k.State) {
			continue
		}
		ds := k.DNSKEY.ToDS(dns.SHA256)
		ds.Hdr.Ttl = ttl
		out = append(out, ds)
	}
	return out
}

// keyDoc is one key as the Secret holds it.
type keyDoc struct {
	Role    Role      `json:"role"`
	State   State     `json:"state"`
	Created time.Time `json:"created"`
	Since   time.Time `json:"since"`
	DNSKEY  string    `json:"dnskey"`
	Private string    `json:"private"`
}

type setDoc struct {
	Zone      string     `json:"zone"`
	Keys      []keyDoc   `json:"keys"`
	Rollover  *Rollover  `json:"rollover,omitempty"`
	Unsigning *Unsigning `json:"unsigning,omitempty"`
}

// Marshal encodes the key set for the Secret's SecretKey entry.
func (s KeySet) Marshal() ([]byte, error) {
	doc := setDoc{Zone: dnswire.Fqdn(s.Zone), Rollover: s.Rollover, Unsigning: s.Unsigning}
	for _, k := range s.Keys {
		doc.Keys = append(doc.Keys, keyDoc{Role: k.Role, State: k.State, Created: k.Created.UTC(), Since: k.Since.UTC(),
			DNSKEY: k.DNSKEY.String(), Private: k.DNSKEY.PrivateKeyString(k.Private)})
	}
	return json.MarshalIndent(doc, "", "  ")
}

// ParseKeySet decodes a key set written by Marshal. Its errors name a key by its position and
// tag, never by its private part.
func ParseKeySet(raw []byte) (KeySet, error) {
	var doc setDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return KeySet{}, notJSON(err)
	}
	s := KeySet{Zone: dnswire.Fqdn(doc.Zone), Rollover: doc.Rollover, Unsigning: doc.Unsigning}
	for i, d := range doc.Keys {
		k, err := parseKey(s.Zone, d)
		if err != nil {
			return KeySet{}, fmt.Errorf("dnssec: key %d of %s: %w", i, s.Zone, err)
		}
		s.Keys = append(s.Keys, k)
	}
	if err := checkKeys(s); err != nil {
		return KeySet{}, fmt.Errorf("dnssec: %w", err)
	}
	if err := checkRollover(s); err != nil {
		return KeySet{}, fmt.Errorf("dnssec: rollover of %s: %w", s.Zone, err)
	}
	return s, nil
}

// notJSON is the error of a key set that does not decode: where it fails, never what it
// holds (a syntax error quotes a character of the text).
func notJSON(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("dnssec: key set is not JSON (at byte %d)", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("dnssec: key set field %q is not a %s", typ.Field, typ.Type)
	}
	return errors.New("dnssec: key set is not JSON")
}

// checkRollover refuses a rollover the machine could not resume: an unknown role or phase, or
// a new key that is not in the set.
func checkRollover(s KeySet) error {
	r := s.Rollover
	if r == nil {
		return nil
	}
	switch r.Role {
	case RoleCSK, RoleKSK, RoleZSK:
	default:
		return fmt.Errorf("unknown role %q", r.Role)
	}
	switch r.Phase {
	case PhasePublish, PhaseActivate, PhaseWithdraw:
	default:
		return fmt.Errorf("unknown phase %q", r.Phase)
	}
	if !slices.ContainsFunc(s.Keys, func(k Key) bool { return k.Tag() == r.New && k.Role == r.Role }) {
		return fmt.Errorf("its new %s, key %d, is not in the set", r.Role, r.New)
	}
	return checkRolloverKeys(s)
}

func parseKey(zone string, d keyDoc) (Key, error) {
	switch d.Role {
	case RoleCSK, RoleKSK, RoleZSK:
	default:
		return Key{}, fmt.Errorf("unknown role %q", d.Role)
	}
	switch d.State {
	case Generated, Published, Active, Retired:
	default:
		return Key{}, fmt.Errorf("unknown state %q", d.State)
	}
	rr, err := dns.NewRR(d.DNSKEY)
	if err != nil {
		return Key{}, fmt.Errorf("DNSKEY does not parse: %w", err)
	}
	k, ok := rr.(*dns.DNSKEY)
	if !ok || !strings.EqualFold(k.Hdr.Name, zone) {
		return Key{}, fmt.Errorf("not a DNSKEY of %s", zone)
	}
	priv, err := k.NewPrivateKey(d.Private)
	if err != nil {
		return Key{}, fmt.Errorf("private key of tag %d does not parse", k.KeyTag())
	}
	return Key{Role: d.Role, State: d.State, Created: d.Created, Since: d.Since, DNSKEY: k, Private: priv}, nil
}
