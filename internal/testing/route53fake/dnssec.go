package route53fake

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/miekg/dns"
)

// Route 53's DNSSEC statuses (Route 53 API Reference, KeySigningKey.Status and
// DNSSECStatus.ServeSignature).
const (
	StatusActive        = "ACTIVE"
	StatusInactive      = "INACTIVE"
	StatusActionNeeded  = "ACTION_NEEDED"
	StatusInternalError = "INTERNAL_FAILURE"
	ServeSigning        = "SIGNING"
	ServeNotSigning     = "NOT_SIGNING"
)

// MaxKSKs is how many key-signing keys one hosted zone may have (Route 53 quotas: two).
const MaxKSKs = 2

// kmsARN is what the fake takes as a customer managed KMS key usable for DNSSEC: an ARN of a
// key in us-east-1, the only region Route 53 takes KSK keys from (Route 53 Developer Guide,
// "Working with customer managed keys for DNSSEC").
var kmsARN = regexp.MustCompile(`^arn:aws:kms:us-east-1:[0-9]{12}:key/[0-9a-fA-F-]{36}$`)

// kskName is a valid key-signing key name (CreateKeySigningKey, Name).
var kskName = regexp.MustCompile(`^[A-Za-z0-9_]{3,128}$`)

// signing is a hosted zone's DNSSEC state.
type signing struct {
	serve string // ServeSignature; "" = NOT_SIGNING
	ksks  []*ksk
}

// ksk is one key-signing key: its KMS key, status and public key.
type ksk struct {
	name, kmsArn, status string
	key                  *dns.DNSKEY
	created, modified    time.Time
}

// dnssecFault is DNSSECFault's: a status every GetDNSSEC reports, with its message.
type dnssecFault struct{ status, message string }

// DNSSECFault makes GetDNSSEC report every zone's signing, and each of its key-signing keys, with
// status ACTION_NEEDED or INTERNAL_FAILURE (StatusActionNeeded, StatusInternalError) and the
// status message msg, as Route 53 does when the KMS key of a KSK is disabled, deleted or no
// longer allows Route 53; "" reports the zones' own states again.
func (s *Server) DNSSECFault(status, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = dnssecFault{status: status, message: msg}
}

// Signing reports a zone's ServeSignature and the statuses of its key-signing keys by name.
func (s *Server) Signing(id string) (string, map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, e := s.zone(id)
	if e != nil {
		return "", nil
	}
	keys := map[string]string{}
	for _, k := range z.sign.ksks {
		keys[k.name] = k.status
	}
	return z.serveSignature(), keys
}

func (z *zone) serveSignature() string {
	if z.sign.serve == "" {
		return ServeNotSigning
	}
	return z.sign.serve
}

// dnssecRoutes are the DNSSEC operations.
func dnssecRoutes() []route {
	post := http.MethodPost
	return []route{
		{post, "keysigningkey", "CreateKeySigningKey"}, {post, "keysigningkey/*/*/activate", "ActivateKeySigningKey"},
		{post, "keysigningkey/*/*/deactivate", "DeactivateKeySigningKey"}, {http.MethodDelete, "keysigningkey/*/*", "DeleteKeySigningKey"},
		{post, "hostedzone/*/enable-dnssec", "EnableHostedZoneDNSSEC"}, {post, "hostedzone/*/disable-dnssec", "DisableHostedZoneDNSSEC"},
		{http.MethodGet, "hostedzone/*/dnssec", "GetDNSSEC"},
	}
}

// dnssecOp serves a DNSSEC operation: its response, HTTP status and error, and whether op is
// one. Callers hold s.mu.
func (s *Server) dnssecOp(op string, r *http.Request, parts []string) (any, int, *apiErr, bool) {
	if e := s.refused(op); e != nil {
		return nil, 0, e, true
	}
	switch op {
	case "CreateKeySigningKey":
		out, e := s.opCreateKSK(r)
		return out, http.StatusCreated, e, true
	case "ActivateKeySigningKey":
		out, e := s.opActivateKSK(parts[1], parts[2])
		return out, http.StatusOK, e, true
	case "DeactivateKeySigningKey":
		out, e := s.opDeactivateKSK(parts[1], parts[2])
		return out, http.StatusOK, e, true
	case "DeleteKeySigningKey":
		out, e := s.opDeleteKSK(parts[1], parts[2])
		return out, http.StatusOK, e, true
	case "EnableHostedZoneDNSSEC":
		out, e := s.opSigning(parts[1], true)
		return out, http.StatusOK, e, true
	case "DisableHostedZoneDNSSEC":
		out, e := s.opSigning(parts[1], false)
		return out, http.StatusOK, e, true
	case "GetDNSSEC":
		out, e := s.opGetDNSSEC(parts[1])
		return out, http.StatusOK, e, true
	}
	return nil, 0, nil, false
}

func (s *Server) opCreateKSK(r *http.Request) (any, *apiErr) {
	var in struct {
		CallerReference         string `xml:"CallerReference"`
		HostedZoneID            string `xml:"HostedZoneId"`
		KeyManagementServiceArn string `xml:"KeyManagementServiceArn"`
		Name                    string `xml:"Name"`
		Status                  string `xml:"Status"`
	}
	if err := xml.NewDecoder(r.Body).Decode(&in); err != nil || in.CallerReference == "" {
		return nil, &apiErr{400, "InvalidInput", "CallerReference, HostedZoneId, KeyManagementServiceArn, Name and Status are required", nil}
	}
	z, e := s.zone(in.HostedZoneID)
	if e != nil {
		return nil, e
	}
	if e := validKSK(z, in.Name, in.KeyManagementServiceArn, in.Status); e != nil {
		return nil, e
	}
	key := &dns.DNSKEY{Hdr: dns.RR_Header{Name: z.name, Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: 3600},
		Flags: 257, Protocol: 3, Algorithm: dns.ECDSAP256SHA256}
	if _, err := key.Generate(256); err != nil {
		return nil, &apiErr{500, "InternalFailure", err.Error(), nil}
	}
	now := time.Now().UTC()
	k := &ksk{name: in.Name, kmsArn: in.KeyManagementServiceArn, status: in.Status, key: key, created: now, modified: now}
	z.sign.ksks = append(z.sign.ksks, k)
	return struct {
		XMLName       xml.Name   `xml:"CreateKeySigningKeyResponse"`
		Xmlns         string     `xml:"xmlns,attr"`
		ChangeInfo    changeInfo `xml:"ChangeInfo"`
		KeySigningKey xmlKSK     `xml:"KeySigningKey"`
	}{Xmlns: ns, ChangeInfo: s.newChange(), KeySigningKey: k.xml(dnssecFault{})}, nil
}

// validKSK checks a CreateKeySigningKey request against zone z, with Route 53's error codes.
func validKSK(z *zone, name, arn, status string) *apiErr {
	switch {
	case z.private:
		return &apiErr{400, "InvalidInput", "DNSSEC signing is not supported for private hosted zones.", nil}
	case !kskName.MatchString(name):
		return &apiErr{400, "InvalidKeySigningKeyName", "The key-signing key (KSK) name that you specified isn't a valid name.", nil}
	case !kmsARN.MatchString(arn):
		return &apiErr{400, "InvalidKMSArn", "The KeyManagementServiceArn that you specified isn't valid to use with DNSSEC signing.", nil}
	case status != StatusActive && status != StatusInactive:
		return &apiErr{400, "InvalidKeySigningKeyStatus", "The key-signing key (KSK) status isn't valid or another KSK has the status INTERNAL_FAILURE.", nil}
	case len(z.sign.ksks) >= MaxKSKs:
		return &apiErr{400, "TooManyKeySigningKeys", "You've reached the limit for the number of key-signing keys (KSKs).", nil}
	}
	for _, k := range z.sign.ksks {
		if k.name == name || k.kmsArn == arn {
			return &apiErr{409, "KeySigningKeyAlreadyExists", "You've already created a key-signing key (KSK) with this name or with the same customer managed key ARN.", nil}
		}
	}
	return nil
}

func (s *Server) opActivateKSK(zoneID, name string) (any, *apiErr) {
	z, e := s.zone(zoneID)
	if e != nil {
		return nil, e
	}
	for _, k := range z.sign.ksks {
		if k.name == name {
			k.status, k.modified = StatusActive, time.Now().UTC()
			return struct {
				XMLName    xml.Name   `xml:"ActivateKeySigningKeyResponse"`
				Xmlns      string     `xml:"xmlns,attr"`
				ChangeInfo changeInfo `xml:"ChangeInfo"`
			}{Xmlns: ns, ChangeInfo: s.newChange()}, nil
		}
	}
	return nil, &apiErr{404, "NoSuchKeySigningKey", "The specified key-signing key (KSK) doesn't exist.", nil}
}

// opSigning is EnableHostedZoneDNSSEC (on) and DisableHostedZoneDNSSEC: enabling needs an
// ACTIVE key-signing key (KeySigningKeyWithActiveStatusNotFound).
func (s *Server) opSigning(zoneID string, on bool) (any, *apiErr) {
	z, e := s.zone(zoneID)
	if e != nil {
		return nil, e
	}
	name := "DisableHostedZoneDNSSECResponse"
	z.sign.serve = ServeNotSigning
	if on {
		name = "EnableHostedZoneDNSSECResponse"
		active := false
		for _, k := range z.sign.ksks {
			active = active || k.status == StatusActive
		}
		if !active {
			return nil, &apiErr{400, "KeySigningKeyWithActiveStatusNotFound", "A key-signing key (KSK) with ACTIVE status wasn't found.", nil}
		}
		z.sign.serve = ServeSigning
	}
	return struct {
		XMLName    xml.Name
		Xmlns      string     `xml:"xmlns,attr"`
		ChangeInfo changeInfo `xml:"ChangeInfo"`
	}{XMLName: xml.Name{Local: name}, Xmlns: ns, ChangeInfo: s.newChange()}, nil
}

func (s *Server) opGetDNSSEC(zoneID string) (any, *apiErr) {
	z, e := s.zone(zoneID)
	if e != nil {
		return nil, e
	}
	type status struct {
		ServeSignature string `xml:"ServeSignature"`
		StatusMessage  string `xml:"StatusMessage,omitempty"`
	}
	out := struct {
		XMLName        xml.Name `xml:"GetDNSSECResponse"`
		Xmlns          string   `xml:"xmlns,attr"`
		KeySigningKeys []xmlKSK `xml:"KeySigningKeys>member"`
		Status         status   `xml:"Status"`
	}{Xmlns: ns, Status: status{ServeSignature: z.serveSignature()}}
	if s.fault.status != "" {
		out.Status = status{ServeSignature: s.fault.status, StatusMessage: s.fault.message}
	}
	for _, k := range z.sign.ksks {
		out.KeySigningKeys = append(out.KeySigningKeys, k.xml(s.fault))
	}
	return out, nil
}

// xmlKSK is a KeySigningKey element (Route 53 API Reference, KeySigningKey).
type xmlKSK struct {
	Name                     string `xml:"Name"`
	KmsArn                   string `xml:"KmsArn"`
	Flag                     int    `xml:"Flag"`
	SigningAlgorithmMnemonic string `xml:"SigningAlgorithmMnemonic"`
	SigningAlgorithmType     int    `xml:"SigningAlgorithmType"`
	DigestAlgorithmMnemonic  string `xml:"DigestAlgorithmMnemonic"`
	DigestAlgorithmType      int    `xml:"DigestAlgorithmType"`
	KeyTag                   int    `xml:"KeyTag"`
	DigestValue              string `xml:"DigestValue"`
	PublicKey                string `xml:"PublicKey"`
	DSRecord                 string `xml:"DSRecord"`
	DNSKEYRecord             string `xml:"DNSKEYRecord"`
	Status                   string `xml:"Status"`
	StatusMessage            string `xml:"StatusMessage,omitempty"`
	CreatedDate              string `xml:"CreatedDate"`
	LastModifiedDate         string `xml:"LastModifiedDate"`
}

// xml is the key's KeySigningKey element, with the fault's status and message when one is set.
func (k *ksk) xml(f dnssecFault) xmlKSK {
	ds := k.key.ToDS(dns.SHA256)
	x := xmlKSK{Name: k.name, KmsArn: k.kmsArn, Flag: int(k.key.Flags), SigningAlgorithmMnemonic: "ECDSAP256SHA256",
		SigningAlgorithmType: int(k.key.Algorithm), DigestAlgorithmMnemonic: "SHA-256", DigestAlgorithmType: int(dns.SHA256),
		KeyTag: int(ds.KeyTag), DigestValue: ds.Digest, PublicKey: k.key.PublicKey,
		DSRecord:     fmt.Sprintf("%d %d %d %s", ds.KeyTag, ds.Algorithm, ds.DigestType, ds.Digest),
		DNSKEYRecord: fmt.Sprintf("%d %d %d %s", k.key.Flags, k.key.Protocol, k.key.Algorithm, k.key.PublicKey),
		Status:       k.status, CreatedDate: k.created.Format(time.RFC3339), LastModifiedDate: k.modified.Format(time.RFC3339)}
	if f.status != "" {
		x.Status, x.StatusMessage = f.status, f.message
	}
	return x
}
