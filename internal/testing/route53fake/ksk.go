package route53fake

import (
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ParentDSFunc answers the DS set a hosted zone's parent publishes for zone (its name, with the
// trailing dot), as DS rdata "<tag> <algorithm> <digest type> <digest>".
type ParentDSFunc func(zone string) ([]string, error)

// kskRules are the fake's rules for the key-signing key operations beyond its own state: how it
// reads the parent's DS set, and the refusals a test asked for.
type kskRules struct {
	parentDS ParentDSFunc
	refuse   map[string]refusal // operation -> the refusal its next requests get
}

// refusal is RefuseKSK's: an error code and message for the next n requests of an operation.
type refusal struct {
	code, message string
	n             int
}

// SetParentDS has DeactivateKeySigningKey read the parent's DS set with f, and refuse with
// KeySigningKeyInParentDSRecord to deactivate a key-signing key whose DS the parent publishes, as
// Route 53 does (API Reference, DeactivateKeySigningKey, Errors); nil: the parent is not read.
func (s *Server) SetParentDS(f ParentDSFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ksk.parentDS = f
}

// RefuseKSK makes the next n requests of the DNSSEC operation op (such as
// "ActivateKeySigningKey") answer HTTP 400 with the error code and message, changing nothing;
// n 0 ends it.
func (s *Server) RefuseKSK(op, code, message string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ksk.refuse == nil {
		s.ksk.refuse = map[string]refusal{}
	}
	s.ksk.refuse[op] = refusal{code: code, message: message, n: n}
}

// refused is the refusal RefuseKSK set for op's next request, counted down. Callers hold s.mu.
func (s *Server) refused(op string) *apiErr {
	r, ok := s.ksk.refuse[op]
	if !ok || r.n <= 0 {
		return nil
	}
	r.n--
	s.ksk.refuse[op] = r
	return &apiErr{400, r.code, r.message, nil}
}

// KSK is one key-signing key of a hosted zone as the fake holds it.
type KSK struct {
	// Name and Status (StatusActive, StatusInactive) as GetDNSSEC lists them.
	Name, Status string
	// DS is the key's DS rdata (SHA-256), as its DSRecord.
	DS string
	// KMSArn is the customer managed KMS key it is in.
	KMSArn string
}

// KSKs lists a hosted zone's key-signing keys, in creation order.
func (s *Server) KSKs(id string) []KSK {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, e := s.zone(id)
	if e != nil {
		return nil
	}
	out := make([]KSK, 0, len(z.sign.ksks))
	for _, k := range z.sign.ksks {
		out = append(out, KSK{Name: k.name, Status: k.status, DS: k.xml(dnssecFault{}).DSRecord, KMSArn: k.kmsArn})
	}
	return out
}

// findKSK is the zone's key-signing key name, or NoSuchKeySigningKey.
func (s *Server) findKSK(zoneID, name string) (*zone, *ksk, *apiErr) {
	z, e := s.zone(zoneID)
	if e != nil {
		return nil, nil, e
	}
	for _, k := range z.sign.ksks {
		if k.name == name {
			return z, k, nil
		}
	}
	return nil, nil, &apiErr{404, "NoSuchKeySigningKey", "The specified key-signing key (KSK) doesn't exist.", nil}
}

// opDeactivateKSK is DeactivateKeySigningKey: the only ACTIVE key-signing key of a signing zone
// is KeySigningKeyInUse, a key whose DS the parent publishes (SetParentDS)
// KeySigningKeyInParentDSRecord; otherwise the key is INACTIVE.
func (s *Server) opDeactivateKSK(zoneID, name string) (any, *apiErr) {
	z, k, e := s.findKSK(zoneID, name)
	if e != nil {
		return nil, e
	}
	if k.status == StatusActive && z.serveSignature() == ServeSigning && z.activeKSKs() == 1 {
		return nil, &apiErr{400, "KeySigningKeyInUse", "The key-signing key (KSK) that you specified can't be deactivated because it's the only KSK for a currently-enabled DNSSEC. Disable DNSSEC signing, or add or enable another KSK.", nil}
	}
	if s.ksk.parentDS != nil {
		ds, err := s.ksk.parentDS(z.name)
		if err != nil {
			return nil, &apiErr{500, "InternalFailure", fmt.Sprintf("reading the parent DS of %s: %v", z.name, err), nil}
		}
		if slices.ContainsFunc(ds, func(d string) bool { return sameDS(d, k.xml(dnssecFault{}).DSRecord) }) {
			return nil, &apiErr{400, "KeySigningKeyInParentDSRecord", "The key-signing key (KSK) is specified in a parent DS record.", nil}
		}
	}
	k.status = StatusInactive
	k.modified = time.Now().UTC()
	return struct {
		XMLName    xml.Name   `xml:"DeactivateKeySigningKeyResponse"`
		Xmlns      string     `xml:"xmlns,attr"`
		ChangeInfo changeInfo `xml:"ChangeInfo"`
	}{Xmlns: ns, ChangeInfo: s.newChange()}, nil
}

// opDeleteKSK is DeleteKeySigningKey: a key that is not INACTIVE is InvalidKeySigningKeyStatus.
func (s *Server) opDeleteKSK(zoneID, name string) (any, *apiErr) {
	z, k, e := s.findKSK(zoneID, name)
	if e != nil {
		return nil, e
	}
	if k.status != StatusInactive {
		return nil, &apiErr{400, "InvalidKeySigningKeyStatus", "The key-signing key (KSK) status isn't valid or another KSK has the status INTERNAL_FAILURE.", nil}
	}
	z.sign.ksks = slices.DeleteFunc(z.sign.ksks, func(o *ksk) bool { return o == k })
	return struct {
		XMLName    xml.Name   `xml:"DeleteKeySigningKeyResponse"`
		Xmlns      string     `xml:"xmlns,attr"`
		ChangeInfo changeInfo `xml:"ChangeInfo"`
	}{Xmlns: ns, ChangeInfo: s.newChange()}, nil
}

// activeKSKs counts the zone's ACTIVE key-signing keys.
func (z *zone) activeKSKs() int {
	n := 0
	for _, k := range z.sign.ksks {
		if k.status == StatusActive {
			n++
		}
	}
	return n
}

// sameDS compares two DS rdata, the digest case-insensitively.
func sameDS(a, b string) bool {
	return strings.EqualFold(strings.Join(strings.Fields(a), " "), strings.Join(strings.Fields(b), " "))
}
