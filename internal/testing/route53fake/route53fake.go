// Package route53fake is an in-memory httptest server for the subset of the
// Route 53 REST/XML API (2013-04-01) that the dnsplane aws provider uses:
// hosted zones, ChangeResourceRecordSets with atomic batches and the
// documented request limits, paged ListResourceRecordSets, GetChange and tags,
// private hosted zones (CreateHostedZone with a VPC), alias record sets
// (AliasTarget) and DNSSEC signing (key-signing keys, EnableHostedZoneDNSSEC,
// GetDNSSEC; dnssec.go).
// Every request must be signed with Signature Version 4 by the one key pair
// the fake accepts (AccessKeyID, SecretAccessKey), as Route 53 requires; the
// public hosted zones are also served over DNS (DNSAddr).
package route53fake

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/dnsplane/dnsplane/internal/testing/fakedns"
)

const ns = "https://route53.amazonaws.com/doc/2013-04-01/"

// Limits of one ChangeResourceRecordSets request (Route 53 API Reference).
const (
	MaxRecordElements = 1000
	MaxValueChars     = 32000
)

// RR is one resource record set as stored.
type RR struct {
	Name          string       `xml:"Name"`
	Type          string       `xml:"Type"`
	SetIdentifier string       `xml:"SetIdentifier,omitempty"`
	Weight        *int64       `xml:"Weight,omitempty"`
	GeoLocation   *GeoLocation `xml:"GeoLocation,omitempty"`
	TTL           *int64       `xml:"TTL,omitempty"`
	AliasTarget   *AliasTarget `xml:"AliasTarget,omitempty"`
	Records       []struct {
		Value string `xml:"Value"`
	} `xml:"ResourceRecords>ResourceRecord"`
}

// GeoLocation is a geolocation record set's location (Route 53 API Reference, GeoLocation):
// a continent code (AF, AN, AS, EU, NA, OC, SA), or a country code (ISO 3166-1 alpha-2, or "*"
// for the default location, the clients that match no other), optionally with a subdivision.
type GeoLocation struct {
	ContinentCode   string `xml:"ContinentCode,omitempty"`
	CountryCode     string `xml:"CountryCode,omitempty"`
	SubdivisionCode string `xml:"SubdivisionCode,omitempty"`
}

// AliasTarget is a record set's alias target (Route 53 API Reference,
// AliasTarget): the hosted zone ID and DNS name of the target, and whether
// Route 53 evaluates the target's health.
type AliasTarget struct {
	HostedZoneID         string `xml:"HostedZoneId"`
	DNSName              string `xml:"DNSName"`
	EvaluateTargetHealth bool   `xml:"EvaluateTargetHealth"`
}

// VPC is the VPC a private hosted zone is associated with.
type VPC struct {
	VPCRegion string `xml:"VPCRegion,omitempty"`
	VPCID     string `xml:"VPCId,omitempty"`
}

type zone struct {
	id, name, ref string
	private       bool
	vpc           VPC // private zones only
	rrs           []RR
	tags          map[string]string
	sign          signing // DNSSEC (dnssec.go)
}

// Default credentials: the only key pair a new fake accepts.
const (
	DefaultAccessKeyID     = "AKIDTEST"
	DefaultSecretAccessKey = "secret"
)

// Server is the fake. All methods are safe for concurrent use.
type Server struct {
	fakedns.Front // the API server (URL, Client, Close) and DNSAddr
	// AccessKeyID and SecretAccessKey are the only credentials the fake
	// accepts (default DefaultAccessKeyID, DefaultSecretAccessKey). Set them
	// before the first request. A request signed with another access key ID
	// gets 403 InvalidClientTokenId; one whose SigV4 signature does not verify
	// with SecretAccessKey gets 403 SignatureDoesNotMatch; an unsigned one
	// gets 403 MissingAuthenticationToken (AWS "Common Errors"). Rotate
	// changes them later.
	AccessKeyID, SecretAccessKey string

	mu        sync.Mutex
	zones     map[string]*zone
	order     []string
	refs      map[string]string
	changes   map[string]int // change id -> GetChange calls so far
	seq       int
	throttle  int
	every     int       // ThrottleEvery's n; 0 = off
	until     time.Time // ThrottleUntil's end; zero = off
	served    int       // requests seen while ThrottleEvery is on
	counts    map[string]int
	lastBatch []int
	fault     dnssecFault // DNSSECFault's
	ksk       kskRules    // SetParentDS's and RefuseKSK's (ksk.go)
}

// New starts a fake server; it is closed by t-style cleanup by the caller.
func New() *Server {
	s := &Server{AccessKeyID: DefaultAccessKeyID, SecretAccessKey: DefaultSecretAccessKey,
		zones: map[string]*zone{}, refs: map[string]string{}, changes: map[string]int{}, counts: map[string]int{}}
	s.Front = fakedns.NewFront(http.HandlerFunc(s.serve), false, &s.mu, s.dnsZones)
	return s
}

// dnsZones is the fakedns.Source (called with s.mu held): every public zone in creation order, each
// record set parsed from its zone-file value after turning Route 53's octal escapes into RFC 1035's
// decimal ones. An alias set is answered as its target's set of the same type (and TTL) when the
// target is a plain set of the same zone, as Route 53 does; other aliases are skipped. Private
// zones are not served (DNSAddr); of several public zones with one name, the first created answers.
func (s *Server) dnsZones() ([]fakedns.Zone, error) {
	var out []fakedns.Zone
	for _, id := range s.order {
		z := s.zones[id]
		if z.private {
			continue
		}
		fz := fakedns.Zone{Name: z.name}
		for _, r := range z.rrs {
			if r.AliasTarget != nil {
				t, ok := z.aliasTarget(r)
				if !ok {
					continue
				}
				r.TTL, r.Records = t.TTL, t.Records
			}
			if r.TTL == nil {
				continue
			}
			values := make([]string, 0, len(r.Records))
			for _, v := range r.Records {
				if r.Type == "TXT" || r.Type == "SPF" {
					values = append(values, octalToDecimal(v.Value))
				} else {
					values = append(values, v.Value)
				}
			}
			rs, err := fakedns.RecordSet(r.Name, r.Type, *r.TTL, values)
			if err != nil {
				return nil, fmt.Errorf("zone %s: %w", z.id, err)
			}
			rs.SetIdentifier, rs.Weight = r.SetIdentifier, r.Weight
			fz.RecordSets = append(fz.RecordSets, rs)
		}
		out = append(out, fz)
	}
	return out, nil
}

// aliasTarget returns the plain set an alias set of z points to: the first
// set of the alias DNS name and the alias' type in z, when the alias' hosted
// zone is z.
func (z *zone) aliasTarget(a RR) (RR, bool) {
	if strings.TrimPrefix(a.AliasTarget.HostedZoneID, "/hostedzone/") != z.id {
		return RR{}, false
	}
	name := fqdn(a.AliasTarget.DNSName)
	for _, r := range z.rrs {
		if r.Name == name && r.Type == a.Type && r.AliasTarget == nil && r.TTL != nil {
			return r, true
		}
	}
	return RR{}, false
}

// octalToDecimal rewrites the \ooo (three octal digits) escapes Route 53 uses
// in TXT values as the \DDD (decimal) escapes of RFC 1035 §5.1 that zone-file
// parsers read; other escapes (\" and \\) are kept.
func octalToDecimal(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+3 < len(v) && isOctal(v[i+1]) && isOctal(v[i+2]) && isOctal(v[i+3]) {
			n := int(v[i+1]-'0')*64 + int(v[i+2]-'0')*8 + int(v[i+3]-'0')
			fmt.Fprintf(&b, `\%03d`, n)
			i += 3
			continue
		}
		if v[i] == '\\' && i+1 < len(v) {
			b.WriteString(v[i : i+2])
			i++
			continue
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// authenticate checks a request's Signature Version 4 (AWS General Reference,
// "Signature Version 4 signing process"): the access key ID of its credential
// scope must be AccessKeyID, and the signature recomputed over its method,
// path, query, signed headers and body with SecretAccessKey must equal the one
// sent. It restores r.Body for the handlers. Callers hold s.mu.
func (s *Server) authenticate(r *http.Request) *apiErr {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return &apiErr{400, "InvalidInput", "cannot read the request body", nil}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	auth := r.Header.Get("Authorization")
	const algo = "AWS4-HMAC-SHA256 "
	if !strings.HasPrefix(auth, algo) {
		return &apiErr{403, "MissingAuthenticationToken", "Missing Authentication Token", nil}
	}
	fields := map[string]string{}
	for _, f := range strings.Split(strings.TrimPrefix(auth, algo), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/") // AKID/date/region/service/aws4_request
	if len(scope) != 5 || fields["SignedHeaders"] == "" || fields["Signature"] == "" {
		return &apiErr{403, "IncompleteSignature", "Authorization header requires Credential, SignedHeaders and Signature.", nil}
	}
	if scope[0] != s.AccessKeyID {
		return &apiErr{403, "InvalidClientTokenId", "The security token included in the request is invalid.", nil}
	}
	signedAt, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return &apiErr{403, "IncompleteSignature", "X-Amz-Date is missing or malformed.", nil}
	}
	c, err := http.NewRequestWithContext(context.Background(), r.Method, "http://"+r.Host+r.URL.RequestURI(), nil)
	if err != nil {
		return &apiErr{400, "InvalidInput", err.Error(), nil}
	}
	c.ContentLength = r.ContentLength
	for _, h := range strings.Split(fields["SignedHeaders"], ";") {
		if h != "host" && h != "content-length" {
			c.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey, SessionToken: r.Header.Get("X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, c, hex.EncodeToString(sum[:]), scope[3], scope[2], signedAt); err != nil {
		return &apiErr{500, "InternalFailure", err.Error(), nil}
	}
	if _, want, _ := strings.Cut(c.Header.Get("Authorization"), "Signature="); want != fields["Signature"] {
		return &apiErr{403, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.", nil}
	}
	return nil
}

// Rotate replaces the only credentials the fake accepts, as a key rotation in IAM that deletes
// the old access key: from now on a request signed with the old ones gets 403.
func (s *Server) Rotate(accessKeyID, secretAccessKey string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.AccessKeyID, s.SecretAccessKey = accessKeyID, secretAccessKey
}

// Throttle makes the next n requests fail with 400 Throttling.
func (s *Server) Throttle(n int) { s.mu.Lock(); s.throttle = n; s.mu.Unlock() }

// ThrottleEvery makes every n-th request from now on fail with 400 Throttling (a throttle storm);
// 0 turns it off.
func (s *Server) ThrottleEvery(n int) { s.mu.Lock(); s.every, s.served = n, 0; s.mu.Unlock() }

// ThrottleUntil makes every request fail with 400 Throttling until end (a throttle that lasts,
// as when an account's whole request quota is spent by another tool).
func (s *Server) ThrottleUntil(end time.Time) { s.mu.Lock(); s.until = end; s.mu.Unlock() }

// Count returns how many requests of an operation ("ChangeResourceRecordSets",
// "ListResourceRecordSets", ...) were served, throttled ones included.
func (s *Server) Count(op string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.counts[op] }

// BatchSizes returns the ResourceRecord element count of every accepted
// ChangeResourceRecordSets request, in order.
func (s *Server) BatchSizes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.lastBatch...)
}

// AddForeignZone creates a zone as another tool would (own caller reference,
// no tags) and returns its ID without the /hostedzone/ prefix.
func (s *Server) AddForeignZone(name, ref string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.createZone(name, ref, false).id
}

// AddForeignPrivateZone is AddForeignZone for a private hosted zone
// associated with the VPC vpcID in region.
func (s *Server) AddForeignPrivateZone(name, ref, vpcID, region string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	z := s.createZone(name, ref, true)
	z.vpc = VPC{VPCRegion: region, VPCID: vpcID}
	return z.id
}

// ZoneVPC reports whether the zone id is private, and its VPC.
func (s *Server) ZoneVPC(id string) (private bool, vpc VPC) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if z, ok := s.zones[strings.TrimPrefix(id, "/hostedzone/")]; ok {
		return z.private, z.vpc
	}
	return false, VPC{}
}

func (s *Server) nextID(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s%013d", prefix, s.seq)
}

func fqdn(n string) string { return strings.TrimSuffix(strings.ToLower(n), ".") + "." }

func (s *Server) createZone(name, ref string, private bool) *zone {
	z := &zone{id: s.nextID("Z"), name: fqdn(name), ref: ref, private: private, tags: map[string]string{}}
	ttl, soaTTL := int64(172800), int64(900)
	nsrr := RR{Name: z.name, Type: "NS", TTL: &ttl}
	for i := 1; i <= 4; i++ {
		nsrr.Records = append(nsrr.Records, struct {
			Value string `xml:"Value"`
		}{fmt.Sprintf("ns-%d.awsdns-%02d.test.", i, s.seq%100)})
	}
	soa := RR{Name: z.name, Type: "SOA", TTL: &soaTTL}
	soa.Records = append(soa.Records, struct {
		Value string `xml:"Value"`
	}{"ns-1.awsdns-00.test. awsdns-hostmaster.amazon.com. 1 7200 900 1209600 86400"})
	z.rrs = []RR{nsrr, soa}
	s.zones[z.id] = z
	s.order = append(s.order, z.id)
	s.refs[ref] = z.id
	return z
}

type apiErr struct {
	status        int
	code, message string
	messages      []string // InvalidChangeBatch
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/2013-04-01/")
	parts := strings.Split(strings.Trim(p, "/"), "/")
	op := opName(r.Method, parts)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[op]++
	if e := s.authenticate(r); e != nil {
		writeErr(w, *e)
		return
	}
	if s.every > 0 {
		s.served++
	}
	if s.throttle > 0 || (s.every > 0 && s.served%s.every == 0) || time.Now().Before(s.until) {
		if s.throttle > 0 {
			s.throttle--
		}
		s.counts["Throttled"]++
		writeErr(w, apiErr{400, "Throttling", "Rate exceeded", nil})
		return
	}
	var (
		out any
		st  = http.StatusOK
		e   *apiErr
	)
	switch op {
	case "CreateHostedZone":
		out, e = s.opCreateZone(r)
		st = http.StatusCreated
	case "ListHostedZones":
		out, e = s.opListZones(r)
	case "ListHostedZonesByName":
		out, e = s.opListZonesByName(r)
	case "GetHostedZone":
		out, e = s.opGetZone(parts[1])
	case "DeleteHostedZone":
		out, e = s.opDeleteZone(parts[1])
	case "ChangeResourceRecordSets":
		out, e = s.opChange(r, parts[1])
	case "ListResourceRecordSets":
		out, e = s.opListRRs(r, parts[1])
	case "GetChange":
		out, e = s.opGetChange(parts[1])
	case "ChangeTagsForResource":
		out, e = s.opChangeTags(r, parts)
	case "ListTagsForResource":
		out, e = s.opListTags(parts)
	default:
		var ok bool
		if out, st, e, ok = s.dnssecOp(op, r, parts); !ok {
			e = &apiErr{404, "InvalidInput", "unsupported operation " + r.Method + " " + r.URL.Path, nil}
		}
	}
	if e != nil {
		writeErr(w, *e)
		return
	}
	b, err := xml.Marshal(out)
	if err != nil {
		writeErr(w, apiErr{500, "InternalFailure", err.Error(), nil})
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Amzn-Requestid", "fake-request")
	w.WriteHeader(st)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(b)
}

// opName names the operation of a request path (below /2013-04-01/), or "Unknown".
func opName(method string, parts []string) string {
	for _, routes := range [][]route{apiRoutes(), dnssecRoutes()} {
		for _, r := range routes {
			if r.matches(method, parts) {
				return r.op
			}
		}
	}
	return "Unknown"
}

// route names the operation of a method ("" for any) on a path below /2013-04-01/ whose
// segments are pattern's, "*" standing for any one segment.
type route struct{ method, pattern, op string }

func (r route) matches(method string, parts []string) bool {
	want := strings.Split(r.pattern, "/")
	if len(want) != len(parts) || (r.method != "" && r.method != method) {
		return false
	}
	for i, w := range want {
		if w != "*" && w != parts[i] {
			return false
		}
	}
	return true
}

// apiRoutes are the hosted zone, record set, change and tag operations.
func apiRoutes() []route {
	get, post := http.MethodGet, http.MethodPost
	return []route{
		{post, "hostedzone", "CreateHostedZone"}, {get, "hostedzone", "ListHostedZones"}, {"", "hostedzonesbyname", "ListHostedZonesByName"},
		{get, "hostedzone/*", "GetHostedZone"}, {http.MethodDelete, "hostedzone/*", "DeleteHostedZone"},
		{post, "hostedzone/*/rrset", "ChangeResourceRecordSets"}, {get, "hostedzone/*/rrset", "ListResourceRecordSets"},
		{"", "change/*", "GetChange"}, {post, "tags/*/*", "ChangeTagsForResource"}, {get, "tags/*/*", "ListTagsForResource"},
	}
}

func writeErr(w http.ResponseWriter, e apiErr) {
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Amzn-Requestid", "fake-request")
	w.WriteHeader(e.status)
	if e.code == "InvalidChangeBatch" {
		type icb struct {
			XMLName   xml.Name `xml:"InvalidChangeBatch"`
			Xmlns     string   `xml:"xmlns,attr"`
			Messages  []string `xml:"Messages>Message"`
			RequestID string   `xml:"RequestId"`
		}
		b, _ := xml.Marshal(icb{Xmlns: ns, Messages: e.messages, RequestID: "fake-request"})
		_, _ = w.Write(append([]byte(xml.Header), b...))
		return
	}
	type er struct {
		XMLName xml.Name `xml:"ErrorResponse"`
		Xmlns   string   `xml:"xmlns,attr"`
		Error   struct {
			Type    string `xml:"Type"`
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
		} `xml:"Error"`
		RequestID string `xml:"RequestId"`
	}
	v := er{Xmlns: ns, RequestID: "fake-request"}
	v.Error.Type, v.Error.Code, v.Error.Message = "Sender", e.code, e.message
	b, _ := xml.Marshal(v)
	_, _ = w.Write(append([]byte(xml.Header), b...))
}

type xmlZone struct {
	ID              string `xml:"Id"`
	Name            string `xml:"Name"`
	CallerReference string `xml:"CallerReference"`
	Config          struct {
		PrivateZone bool `xml:"PrivateZone"`
	} `xml:"Config"`
	ResourceRecordSetCount int `xml:"ResourceRecordSetCount"`
}

type changeInfo struct {
	ID          string `xml:"Id"`
	Status      string `xml:"Status"`
	SubmittedAt string `xml:"SubmittedAt"`
}

type delegationSet struct {
	NameServers []string `xml:"NameServers>NameServer"`
}

func (z *zone) xml() xmlZone {
	x := xmlZone{ID: "/hostedzone/" + z.id, Name: z.name, CallerReference: z.ref, ResourceRecordSetCount: len(z.rrs)}
	x.Config.PrivateZone = z.private
	return x
}

// vpcs is the zone's VPC for responses, nil for a public zone.
func (z *zone) vpcs() *VPC {
	if !z.private {
		return nil
	}
	v := z.vpc
	return &v
}

func (z *zone) delegation() *delegationSet {
	d := &delegationSet{}
	for _, r := range z.rrs {
		if r.Type == "NS" && r.Name == z.name {
			for _, v := range r.Records {
				d.NameServers = append(d.NameServers, v.Value)
			}
		}
	}
	return d
}

func (s *Server) newChange() changeInfo {
	id := s.nextID("C")
	s.changes[id] = 0
	return changeInfo{ID: "/change/" + id, Status: "PENDING", SubmittedAt: time.Now().UTC().Format(time.RFC3339)}
}

func (s *Server) opCreateZone(r *http.Request) (any, *apiErr) {
	var in struct {
		Name             string `xml:"Name"`
		CallerReference  string `xml:"CallerReference"`
		VPC              *VPC   `xml:"VPC"`
		HostedZoneConfig struct {
			PrivateZone bool `xml:"PrivateZone"`
		} `xml:"HostedZoneConfig"`
	}
	if err := xml.NewDecoder(r.Body).Decode(&in); err != nil || in.Name == "" || in.CallerReference == "" {
		return nil, &apiErr{400, "InvalidInput", "Name and CallerReference are required", nil}
	}
	// A VPC makes the zone private (Route 53 API Reference, CreateHostedZone);
	// a private zone needs one, with both its ID and region.
	private := in.VPC != nil
	if private && (in.VPC.VPCID == "" || in.VPC.VPCRegion == "") {
		return nil, &apiErr{400, "InvalidVPCId", "VPC requires both VPCId and VPCRegion.", nil}
	}
	if in.HostedZoneConfig.PrivateZone && !private {
		return nil, &apiErr{400, "InvalidInput", "A private hosted zone requires a VPC.", nil}
	}
	if _, dup := s.refs[in.CallerReference]; dup {
		return nil, &apiErr{409, "HostedZoneAlreadyExists", "A hosted zone has already been created with the specified caller reference.", nil}
	}
	z := s.createZone(in.Name, in.CallerReference, private)
	if private {
		z.vpc = *in.VPC
	}
	return struct {
		XMLName       xml.Name       `xml:"CreateHostedZoneResponse"`
		Xmlns         string         `xml:"xmlns,attr"`
		HostedZone    xmlZone        `xml:"HostedZone"`
		ChangeInfo    changeInfo     `xml:"ChangeInfo"`
		DelegationSet *delegationSet `xml:"DelegationSet"`
		VPC           *VPC           `xml:"VPC,omitempty"`
	}{Xmlns: ns, HostedZone: z.xml(), ChangeInfo: s.newChange(), DelegationSet: z.delegation(), VPC: z.vpcs()}, nil
}

func maxItems(r *http.Request, def int) int {
	if n, err := strconv.Atoi(r.URL.Query().Get("maxitems")); err == nil && n > 0 {
		return min(n, def)
	}
	return def
}

func (s *Server) opListZones(r *http.Request) (any, *apiErr) {
	type resp struct {
		XMLName     xml.Name  `xml:"ListHostedZonesResponse"`
		Xmlns       string    `xml:"xmlns,attr"`
		HostedZones []xmlZone `xml:"HostedZones>HostedZone"`
		Marker      string    `xml:"Marker"`
		IsTruncated bool      `xml:"IsTruncated"`
		NextMarker  string    `xml:"NextMarker,omitempty"`
		MaxItems    int       `xml:"MaxItems"`
	}
	n := maxItems(r, 100)
	marker := r.URL.Query().Get("marker")
	out := resp{Xmlns: ns, Marker: marker, MaxItems: n}
	started := marker == ""
	for _, id := range s.order {
		if !started {
			started = id == marker
			if !started {
				continue
			}
		}
		if len(out.HostedZones) == n {
			out.IsTruncated, out.NextMarker = true, id
			break
		}
		out.HostedZones = append(out.HostedZones, s.zones[id].xml())
	}
	return out, nil
}

func reverseName(n string) string {
	l := strings.Split(strings.TrimSuffix(n, "."), ".")
	for i, j := 0, len(l)-1; i < j; i, j = i+1, j-1 {
		l[i], l[j] = l[j], l[i]
	}
	return strings.Join(l, ".")
}

func (s *Server) opListZonesByName(r *http.Request) (any, *apiErr) {
	type resp struct {
		XMLName          xml.Name  `xml:"ListHostedZonesByNameResponse"`
		Xmlns            string    `xml:"xmlns,attr"`
		HostedZones      []xmlZone `xml:"HostedZones>HostedZone"`
		DNSName          string    `xml:"DNSName,omitempty"`
		HostedZoneID     string    `xml:"HostedZoneId,omitempty"`
		IsTruncated      bool      `xml:"IsTruncated"`
		NextDNSName      string    `xml:"NextDNSName,omitempty"`
		NextHostedZoneID string    `xml:"NextHostedZoneId,omitempty"`
		MaxItems         int       `xml:"MaxItems"`
	}
	q := r.URL.Query()
	n := maxItems(r, 100)
	out := resp{Xmlns: ns, DNSName: q.Get("dnsname"), HostedZoneID: q.Get("hostedzoneid"), MaxItems: n}
	zs := make([]*zone, 0, len(s.zones))
	for _, z := range s.zones {
		zs = append(zs, z)
	}
	sort.Slice(zs, func(i, j int) bool {
		a, b := reverseName(zs[i].name), reverseName(zs[j].name)
		if a != b {
			return a < b
		}
		return zs[i].id < zs[j].id
	})
	startName := ""
	if d := q.Get("dnsname"); d != "" {
		startName = reverseName(fqdn(d))
	}
	startID := strings.TrimPrefix(q.Get("hostedzoneid"), "/hostedzone/")
	for _, z := range zs {
		rn := reverseName(z.name)
		if rn < startName || (rn == startName && startID != "" && z.id < startID) {
			continue
		}
		if len(out.HostedZones) == n {
			out.IsTruncated, out.NextDNSName, out.NextHostedZoneID = true, z.name, z.id
			break
		}
		out.HostedZones = append(out.HostedZones, z.xml())
	}
	return out, nil
}

func (s *Server) zone(id string) (*zone, *apiErr) {
	z, ok := s.zones[strings.TrimPrefix(id, "/hostedzone/")]
	if !ok {
		return nil, &apiErr{404, "NoSuchHostedZone", "No hosted zone found with ID: " + id, nil}
	}
	return z, nil
}

func (s *Server) opGetZone(id string) (any, *apiErr) {
	z, e := s.zone(id)
	if e != nil {
		return nil, e
	}
	out := struct {
		XMLName       xml.Name       `xml:"GetHostedZoneResponse"`
		Xmlns         string         `xml:"xmlns,attr"`
		HostedZone    xmlZone        `xml:"HostedZone"`
		DelegationSet *delegationSet `xml:"DelegationSet,omitempty"`
		VPCs          []VPC          `xml:"VPCs>VPC,omitempty"`
	}{Xmlns: ns, HostedZone: z.xml()}
	// Private zones have VPCs and no delegation set (Route 53 API Reference, GetHostedZone).
	if z.private {
		out.VPCs = []VPC{z.vpc}
	} else {
		out.DelegationSet = z.delegation()
	}
	return out, nil
}

func (s *Server) opDeleteZone(id string) (any, *apiErr) {
	z, e := s.zone(id)
	if e != nil {
		return nil, e
	}
	for _, r := range z.rrs {
		if r.Name != z.name || (r.Type != "NS" && r.Type != "SOA") {
			return nil, &apiErr{400, "HostedZoneNotEmpty", "The specified hosted zone contains non-required resource record sets and so cannot be deleted.", nil}
		}
	}
	delete(s.zones, z.id)
	for i, o := range s.order {
		if o == z.id {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
	// Route 53 keeps the caller reference used.
	return struct {
		XMLName    xml.Name   `xml:"DeleteHostedZoneResponse"`
		Xmlns      string     `xml:"xmlns,attr"`
		ChangeInfo changeInfo `xml:"ChangeInfo"`
	}{Xmlns: ns, ChangeInfo: s.newChange()}, nil
}

func rrKey(r RR) string { return r.Name + "|" + r.Type + "|" + r.SetIdentifier }

func sameRR(a, b RR) bool {
	if rrKey(a) != rrKey(b) || (a.TTL == nil) != (b.TTL == nil) || (a.TTL != nil && *a.TTL != *b.TTL) ||
		(a.Weight == nil) != (b.Weight == nil) || (a.Weight != nil && *a.Weight != *b.Weight) || len(a.Records) != len(b.Records) ||
		(a.GeoLocation == nil) != (b.GeoLocation == nil) || (a.GeoLocation != nil && *a.GeoLocation != *b.GeoLocation) ||
		(a.AliasTarget == nil) != (b.AliasTarget == nil) || (a.AliasTarget != nil && !sameAlias(*a.AliasTarget, *b.AliasTarget)) {
		return false
	}
	seen := map[string]int{}
	for _, v := range a.Records {
		seen[v.Value]++
	}
	for _, v := range b.Records {
		seen[v.Value]--
		if seen[v.Value] < 0 {
			return false
		}
	}
	return true
}

// continents are Route 53's continent codes (Route 53 API Reference, GeoLocation).
var continents = map[string]bool{"AF": true, "AN": true, "AS": true, "EU": true, "NA": true, "OC": true, "SA": true}

// checkGeo returns Route 53's refusal of a geolocation record set, "" when it is fine
// (Route 53 API Reference, GeoLocation and ResourceRecordSet): a location needs a set
// identifier and no weight, and is either a continent or a country ("*" the default), a
// subdivision only within a country.
func checkGeo(rs RR, desc string) string {
	g := rs.GeoLocation
	if g == nil {
		return ""
	}
	switch {
	case rs.SetIdentifier == "":
		return "Invalid request: a geolocation record set needs a SetIdentifier in Change with " + desc
	case rs.Weight != nil:
		return "Invalid request: Expected exactly one of [Weight, Region, Failover, GeoLocation, MultiValueAnswer, GeoProximityLocation, or CidrRoutingConfig], but found more than one in Change with " + desc
	case g.ContinentCode != "" && (g.CountryCode != "" || g.SubdivisionCode != ""):
		return "Invalid request: a GeoLocation is a continent or a country, not both, in Change with " + desc
	case g.ContinentCode != "" && !continents[g.ContinentCode]:
		return "Value '" + g.ContinentCode + "' at 'changeBatch.changes.resourceRecordSet.geoLocation.continentCode' failed to satisfy constraint: unknown continent code"
	case g.ContinentCode == "" && g.CountryCode == "":
		return "Invalid request: an empty GeoLocation in Change with " + desc
	case g.CountryCode != "" && g.CountryCode != "*" && (len(g.CountryCode) != 2 || strings.ToUpper(g.CountryCode) != g.CountryCode):
		return "Value '" + g.CountryCode + "' at 'changeBatch.changes.resourceRecordSet.geoLocation.countryCode' failed to satisfy constraint: not a country code"
	case g.SubdivisionCode != "" && g.CountryCode == "*":
		return "Invalid request: the default location has no subdivision in Change with " + desc
	}
	return ""
}

// mixedPolicies returns Route 53's refusals of geolocation record sets that share a name and
// type with record sets of another routing policy (weighted or simple), or a location twice.
func mixedPolicies(rrs []RR) []string {
	type nt struct{ name, typ string }
	policy := map[nt]string{}
	seenLoc := map[string]bool{}
	var msgs []string
	for _, r := range rrs {
		p := "simple"
		switch {
		case r.GeoLocation != nil:
			p = "geolocation"
			loc := r.Name + "|" + r.Type + "|" + r.GeoLocation.ContinentCode + "|" + r.GeoLocation.CountryCode + "|" + r.GeoLocation.SubdivisionCode
			if seenLoc[loc] {
				msgs = append(msgs, fmt.Sprintf("Duplicate geolocation for [%s] of type [%s]: %+v", strings.TrimSuffix(r.Name, "."), r.Type, *r.GeoLocation))
			}
			seenLoc[loc] = true
		case r.Weight != nil:
			p = "weighted"
		}
		k := nt{r.Name, r.Type}
		// Only geolocation is checked: the fake predates this rule for weighted beside simple.
		if q, ok := policy[k]; ok && q != p && (q == "geolocation" || p == "geolocation") {
			msgs = append(msgs, fmt.Sprintf("RRSet with DNS name %s, type %s cannot be created because a %s RRSet with the same name and type already exists", strings.TrimSuffix(r.Name, "."), r.Type, q))
		}
		if _, ok := policy[k]; !ok {
			policy[k] = p
		}
	}
	return msgs
}

// RecordSets returns the record sets of zone id as stored, sorted as ListResourceRecordSets
// lists them, for tests that check what was written.
func (s *Server) RecordSets(id string) []RR {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, ok := s.zones[strings.TrimPrefix(id, "/hostedzone/")]
	if !ok {
		return nil
	}
	out := append([]RR(nil), z.rrs...)
	key := func(r RR) string { return reverseName(r.Name) + "\x00" + r.Type + "\x00" + r.SetIdentifier }
	sort.Slice(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out
}

func sameAlias(a, b AliasTarget) bool {
	return strings.TrimPrefix(a.HostedZoneID, "/hostedzone/") == strings.TrimPrefix(b.HostedZoneID, "/hostedzone/") &&
		fqdn(a.DNSName) == fqdn(b.DNSName) && a.EvaluateTargetHealth == b.EvaluateTargetHealth
}

func (s *Server) opChange(r *http.Request, id string) (any, *apiErr) {
	z, e := s.zone(id)
	if e != nil {
		return nil, e
	}
	var in struct {
		Changes []struct {
			Action string `xml:"Action"`
			RRSet  RR     `xml:"ResourceRecordSet"`
		} `xml:"ChangeBatch>Changes>Change"`
	}
	if err := xml.NewDecoder(r.Body).Decode(&in); err != nil || len(in.Changes) == 0 {
		return nil, &apiErr{400, "InvalidInput", "malformed or empty change batch", nil}
	}
	elems, chars := 0, 0
	for _, c := range in.Changes {
		k := 1
		if c.Action == "UPSERT" {
			k = 2
		}
		elems += k * len(c.RRSet.Records)
		for _, v := range c.RRSet.Records {
			chars += k * len(v.Value)
		}
	}
	if elems > MaxRecordElements {
		return nil, &apiErr{400, "InvalidChangeBatch", "", []string{fmt.Sprintf("Number of records limit of %d exceeded.", MaxRecordElements)}}
	}
	if chars > MaxValueChars {
		return nil, &apiErr{400, "InvalidChangeBatch", "", []string{fmt.Sprintf("RDATA character limit of %d exceeded.", MaxValueChars)}}
	}
	rrs := append([]RR(nil), z.rrs...)
	idx := func(k string) int {
		for i := range rrs {
			if rrKey(rrs[i]) == k {
				return i
			}
		}
		return -1
	}
	var msgs []string
	for _, c := range in.Changes {
		rs := c.RRSet
		rs.Name = fqdn(strings.ReplaceAll(rs.Name, `\052`, "*"))
		desc := fmt.Sprintf("[%s] of type [%s] with set identifier [%s]", strings.TrimSuffix(rs.Name, "."), rs.Type, rs.SetIdentifier)
		if rs.Name != z.name && !strings.HasSuffix(rs.Name, "."+z.name) {
			msgs = append(msgs, fmt.Sprintf("RRSet with DNS name %s is not permitted in zone %s", rs.Name, z.name))
			continue
		}
		if at := rs.AliasTarget; at != nil {
			// Route 53 API Reference, ResourceRecordSet: an alias has no TTL and no ResourceRecords.
			if rs.TTL != nil || len(rs.Records) > 0 {
				msgs = append(msgs, "Invalid request: Expected exactly one of [AliasTarget, all of [TTL, and ResourceRecords], or TrafficPolicyInstanceId], but found more than one in Change with "+desc)
				continue
			}
			if at.DNSName == "" || at.HostedZoneID == "" {
				msgs = append(msgs, "Invalid request: AliasTarget needs DNSName and HostedZoneId for "+desc)
				continue
			}
			if tz, ok := s.zones[strings.TrimPrefix(at.HostedZoneID, "/hostedzone/")]; ok {
				if n := fqdn(at.DNSName); n != tz.name && !strings.HasSuffix(n, "."+tz.name) {
					msgs = append(msgs, fmt.Sprintf("Tried to create an alias that targets %s, type %s in zone %s, but the alias target name does not lie within the target zone", n, rs.Type, tz.id))
					continue
				}
			}
		} else if len(rs.Records) == 0 || rs.TTL == nil {
			msgs = append(msgs, "Invalid request: missing ResourceRecords or TTL for "+desc)
			continue
		}
		if msg := checkGeo(rs, desc); msg != "" {
			msgs = append(msgs, msg)
			continue
		}
		i := idx(rrKey(rs))
		switch c.Action {
		case "CREATE":
			if i >= 0 {
				msgs = append(msgs, "Tried to create resource record set "+desc+" but it already exists")
				continue
			}
			rrs = append(rrs, rs)
		case "DELETE":
			if i < 0 {
				msgs = append(msgs, "Tried to delete resource record set "+desc+" but it was not found")
				continue
			}
			if !sameRR(rrs[i], rs) {
				msgs = append(msgs, "Tried to delete resource record set "+desc+" but the values provided do not match the current values")
				continue
			}
			rrs = append(rrs[:i], rrs[i+1:]...)
		case "UPSERT":
			if i >= 0 {
				rrs[i] = rs
			} else {
				rrs = append(rrs, rs)
			}
		default:
			msgs = append(msgs, "Invalid action "+c.Action)
		}
	}
	if len(msgs) == 0 {
		msgs = mixedPolicies(rrs)
	}
	if len(msgs) > 0 {
		return nil, &apiErr{400, "InvalidChangeBatch", "", msgs}
	}
	z.rrs = rrs
	s.lastBatch = append(s.lastBatch, elems)
	return struct {
		XMLName    xml.Name   `xml:"ChangeResourceRecordSetsResponse"`
		Xmlns      string     `xml:"xmlns,attr"`
		ChangeInfo changeInfo `xml:"ChangeInfo"`
	}{Xmlns: ns, ChangeInfo: s.newChange()}, nil
}

func (s *Server) opListRRs(r *http.Request, id string) (any, *apiErr) {
	z, e := s.zone(id)
	if e != nil {
		return nil, e
	}
	type resp struct {
		XMLName              xml.Name `xml:"ListResourceRecordSetsResponse"`
		Xmlns                string   `xml:"xmlns,attr"`
		ResourceRecordSets   []RR     `xml:"ResourceRecordSets>ResourceRecordSet"`
		IsTruncated          bool     `xml:"IsTruncated"`
		NextRecordName       string   `xml:"NextRecordName,omitempty"`
		NextRecordType       string   `xml:"NextRecordType,omitempty"`
		NextRecordIdentifier string   `xml:"NextRecordIdentifier,omitempty"`
		MaxItems             int      `xml:"MaxItems"`
	}
	q := r.URL.Query()
	n := maxItems(r, 300)
	sorted := append([]RR(nil), z.rrs...)
	key := func(r RR) string { return reverseName(r.Name) + "\x00" + r.Type + "\x00" + r.SetIdentifier }
	sort.Slice(sorted, func(i, j int) bool { return key(sorted[i]) < key(sorted[j]) })
	out := resp{Xmlns: ns, MaxItems: n}
	var start string
	if name := q.Get("name"); name != "" {
		start = reverseName(fqdn(name)) + "\x00" + q.Get("type") + "\x00" + q.Get("identifier")
	}
	for _, rr := range sorted {
		if key(rr) < start {
			continue
		}
		if len(out.ResourceRecordSets) == n {
			out.IsTruncated, out.NextRecordName, out.NextRecordType, out.NextRecordIdentifier = true, rr.Name, rr.Type, rr.SetIdentifier
			break
		}
		rr.Name = strings.Replace(rr.Name, "*", `\052`, 1)
		out.ResourceRecordSets = append(out.ResourceRecordSets, rr)
	}
	return out, nil
}

// GetChange reports PENDING on the first poll of a change, INSYNC after.
func (s *Server) opGetChange(id string) (any, *apiErr) {
	n, ok := s.changes[id]
	if !ok {
		return nil, &apiErr{404, "NoSuchChange", "A change with the specified change ID does not exist.", nil}
	}
	s.changes[id] = n + 1
	st := "PENDING"
	if n > 0 {
		st = "INSYNC"
	}
	return struct {
		XMLName    xml.Name   `xml:"GetChangeResponse"`
		Xmlns      string     `xml:"xmlns,attr"`
		ChangeInfo changeInfo `xml:"ChangeInfo"`
	}{Xmlns: ns, ChangeInfo: changeInfo{ID: "/change/" + id, Status: st, SubmittedAt: time.Now().UTC().Format(time.RFC3339)}}, nil
}

type tag struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

func (s *Server) opChangeTags(r *http.Request, parts []string) (any, *apiErr) {
	if parts[1] != "hostedzone" {
		return nil, &apiErr{400, "InvalidInput", "only hostedzone tags are supported", nil}
	}
	z, e := s.zone(parts[2])
	if e != nil {
		return nil, e
	}
	var in struct {
		Add    []tag    `xml:"AddTags>Tag"`
		Remove []string `xml:"RemoveTagKeys>Key"`
	}
	if err := xml.NewDecoder(r.Body).Decode(&in); err != nil {
		return nil, &apiErr{400, "InvalidInput", err.Error(), nil}
	}
	for _, t := range in.Add {
		z.tags[t.Key] = t.Value
	}
	for _, k := range in.Remove {
		delete(z.tags, k)
	}
	return struct {
		XMLName xml.Name `xml:"ChangeTagsForResourceResponse"`
		Xmlns   string   `xml:"xmlns,attr"`
	}{Xmlns: ns}, nil
}

func (s *Server) opListTags(parts []string) (any, *apiErr) {
	z, e := s.zone(parts[2])
	if e != nil {
		return nil, e
	}
	type set struct {
		ResourceType string `xml:"ResourceType"`
		ResourceID   string `xml:"ResourceId"`
		Tags         []tag  `xml:"Tags>Tag"`
	}
	out := set{ResourceType: "hostedzone", ResourceID: z.id}
	keys := make([]string, 0, len(z.tags))
	for k := range z.tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out.Tags = append(out.Tags, tag{k, z.tags[k]})
	}
	return struct {
		XMLName        xml.Name `xml:"ListTagsForResourceResponse"`
		Xmlns          string   `xml:"xmlns,attr"`
		ResourceTagSet set      `xml:"ResourceTagSet"`
	}{Xmlns: ns, ResourceTagSet: out}, nil
}
