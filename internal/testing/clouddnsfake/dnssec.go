package clouddnsfake

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// DNSSECConfig is a managed zone's dnssecConfig (Cloud DNS API, ManagedZoneDnsSecConfig): state
// "off", "on" or "transfer", nonExistence "nsec" or "nsec3", and the specs of the keys signing
// is turned on with.
type DNSSECConfig struct {
	Kind            string    `json:"kind,omitempty"`
	State           string    `json:"state,omitempty"`
	NonExistence    string    `json:"nonExistence,omitempty"`
	DefaultKeySpecs []KeySpec `json:"defaultKeySpecs,omitempty"`
}

// KeySpec is a DnsKeySpec: keyType "keySigning" or "zoneSigning", an algorithm and its key
// length.
type KeySpec struct {
	Kind      string `json:"kind,omitempty"`
	KeyType   string `json:"keyType"`
	Algorithm string `json:"algorithm"`
	KeyLength int64  `json:"keyLength,omitempty"`
}

// dnsKey is a DnsKey of the API, with the key it stands for.
type dnsKey struct {
	typ string // keySigning or zoneSigning
	key *dns.DNSKEY
	id  int
	at  time.Time
}

// keyAlgorithms are the DnsKeySpec algorithms the fake makes keys of.
var keyAlgorithms = map[string]uint8{"ecdsap256sha256": dns.ECDSAP256SHA256, "ecdsap384sha384": dns.ECDSAP384SHA384,
	"rsasha256": dns.RSASHA256, "rsasha512": dns.RSASHA512}

// patchZone is managedZones.patch of the dnssecConfig: turning it "on" makes a key of each
// default key spec (a key-signing and a zone-signing ECDSAP256SHA256 key without specs);
// nonExistence and defaultKeySpecs change only while the state is off (else 400 invalid);
// "off" drops the keys. It answers the Operation, done. Callers hold s.mu.
func (s *Server) patchZone(w http.ResponseWriter, r *http.Request, z *zone) {
	var in ManagedZone
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		s.fail(w, apiError{code: 400, reason: "parseError", msg: err.Error()})
		return
	}
	old := z.mz
	if c := in.DNSSECConfig; c != nil {
		if e := z.setDNSSEC(*c); e != nil {
			s.fail(w, *e)
			return
		}
	}
	s.seq++
	reply(w, 200, map[string]any{"kind": "dns#operation", "id": strconv.FormatUint(s.seq, 10), "status": "done", "type": "UPDATE",
		"startTime": time.Now().UTC().Format(time.RFC3339Nano), "zoneContext": map[string]any{"oldValue": old, "newValue": z.mz}})
}

// setDNSSEC applies a patch's dnssecConfig to z.
func (z *zone) setDNSSEC(c DNSSECConfig) *apiError {
	cur := DNSSECConfig{State: "off"}
	if z.mz.DNSSECConfig != nil {
		cur = *z.mz.DNSSECConfig
	}
	if c.State == "" {
		c.State = cur.State
	}
	switch {
	case c.State != "on" && c.State != "off" && c.State != "transfer":
		return &apiError{code: 400, reason: "invalid", msg: fmt.Sprintf("Invalid value for 'entity.managedZone.dnssecConfig.state': '%s'", c.State)}
	case c.NonExistence != "" && c.NonExistence != "nsec" && c.NonExistence != "nsec3":
		return &apiError{code: 400, reason: "invalid", msg: fmt.Sprintf("Invalid value for 'entity.managedZone.dnssecConfig.nonExistence': '%s'", c.NonExistence)}
	case cur.State != "off" && ((c.NonExistence != "" && c.NonExistence != cur.NonExistence) || (c.DefaultKeySpecs != nil && !slices.Equal(c.DefaultKeySpecs, cur.DefaultKeySpecs))):
		return &apiError{code: 400, reason: "invalid", msg: "The dnssecConfig nonExistence and defaultKeySpecs can only be changed while the state is OFF."}
	}
	if c.NonExistence == "" {
		c.NonExistence = cmp.Or(cur.NonExistence, "nsec")
	}
	if c.DefaultKeySpecs == nil {
		c.DefaultKeySpecs = cur.DefaultKeySpecs
	}
	if c.State == "on" && cur.State != "on" {
		keys, e := makeKeys(z.mz.DNSName, c.DefaultKeySpecs)
		if e != nil {
			return e
		}
		z.keys = keys
	}
	if c.State == "off" {
		z.keys = nil
	}
	c.Kind = "dns#managedZoneDnsSecConfig"
	z.mz.DNSSECConfig = &c
	return nil
}

// makeKeys makes a key of each spec (default: an ECDSAP256SHA256 key-signing key and zone-signing
// key) for the zone origin.
func makeKeys(origin string, specs []KeySpec) ([]*dnsKey, *apiError) {
	if len(specs) == 0 {
		specs = []KeySpec{{KeyType: "keySigning", Algorithm: "ecdsap256sha256", KeyLength: 256},
			{KeyType: "zoneSigning", Algorithm: "ecdsap256sha256", KeyLength: 256}}
	}
	var out []*dnsKey
	for i, sp := range specs {
		alg, ok := keyAlgorithms[sp.Algorithm]
		if !ok || (sp.KeyType != "keySigning" && sp.KeyType != "zoneSigning") {
			return nil, &apiError{code: 400, reason: "invalid", msg: fmt.Sprintf("Invalid value for 'entity.managedZone.dnssecConfig.defaultKeySpecs[%d]'", i)}
		}
		k := &dns.DNSKEY{Hdr: dns.RR_Header{Name: origin, Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET}, Flags: dns.ZONE, Protocol: 3, Algorithm: alg}
		if sp.KeyType == "keySigning" {
			k.Flags |= dns.SEP
		}
		bits := int(sp.KeyLength)
		if alg == dns.ECDSAP256SHA256 || alg == dns.ECDSAP384SHA384 || bits == 0 {
			bits = map[uint8]int{dns.ECDSAP256SHA256: 256, dns.ECDSAP384SHA384: 384, dns.RSASHA256: 2048, dns.RSASHA512: 2048}[alg]
		}
		if _, err := k.Generate(bits); err != nil {
			return nil, &apiError{code: 500, reason: "internalError", msg: err.Error()}
		}
		out = append(out, &dnsKey{typ: sp.KeyType, key: k, id: i, at: time.Now().UTC()})
	}
	return out, nil
}

// listKeys is dnsKeys.list: every key of the zone, with its digests of the types the digestType
// parameter names (comma-separated sha1, sha256, sha384; default sha256). Callers hold s.mu.
func (s *Server) listKeys(w http.ResponseWriter, q url.Values, z *zone) {
	types := []string{"sha256"}
	if v := q.Get("digestType"); v != "" {
		types = nil
		for _, t := range strings.Split(v, ",") {
			if t != "sha1" && t != "sha256" && t != "sha384" {
				s.fail(w, apiError{code: 400, reason: "invalid", msg: "Invalid value for 'parameters.digestType': '" + t + "'"})
				return
			}
			types = append(types, t)
		}
	}
	codes := map[string]uint8{"sha1": dns.SHA1, "sha256": dns.SHA256, "sha384": dns.SHA384}
	out := make([]map[string]any, 0, len(z.keys))
	for _, k := range z.keys {
		var digests []map[string]string
		for _, t := range types {
			digests = append(digests, map[string]string{"type": t, "digest": k.key.ToDS(codes[t]).Digest})
		}
		out = append(out, map[string]any{"kind": "dns#dnsKey", "id": strconv.Itoa(k.id), "type": k.typ, "isActive": true,
			"algorithm": algName(k.key.Algorithm), "keyTag": k.key.KeyTag(), "publicKey": k.key.PublicKey,
			"keyLength": keyLength(k.key), "digests": digests, "creationTime": k.at.Format(time.RFC3339Nano)})
	}
	page, next, e := s.page(len(out), q)
	if e != nil {
		s.fail(w, *e)
		return
	}
	reply(w, 200, map[string]any{"kind": "dns#dnsKeysListResponse", "dnsKeys": out[page[0]:page[1]], "nextPageToken": next})
}

// algName is the API's lower-case name of a DNSSEC algorithm.
func algName(alg uint8) string {
	for n, a := range keyAlgorithms {
		if a == alg {
			return n
		}
	}
	return ""
}

func keyLength(k *dns.DNSKEY) int {
	switch k.Algorithm {
	case dns.ECDSAP256SHA256:
		return 256
	case dns.ECDSAP384SHA384:
		return 384
	}
	return 2048
}
