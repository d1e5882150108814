// Package azurefake is an in-memory Azure DNS (ARM, api-version 2018-05-01)
// and Entra ID token endpoint over TLS, for tests of the azure provider with
// the real armdns and azidentity clients.
//
// Implemented: Zones CreateOrUpdate (synchronous, If-None-Match: * / If-Match),
// Get, ListByResourceGroup, Delete (long-running: 202 with
// Azure-AsyncOperation and Location); RecordSets CreateOrUpdate (ETag
// If-Match / If-None-Match: *, 412 PreconditionFailed), Get, Delete (If-Match),
// ListAllByDnsZone and ListByDnsZone with $top and nextLink paging; injectable
// 429 with Retry-After; and the OAuth 2.0 client-credentials token endpoint
// with the OpenID discovery document MSAL reads. The zones are also served
// over DNS (DNSAddr).
package azurefake

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/dns/armdns"
	"k8s.io/utils/ptr"

	"github.com/dnsplane/dnsplane/internal/testing/fakedns"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Server is the fake. Its URL serves both ARM and the token endpoint.
type Server struct {
	fakedns.Front // the API server (URL, Client, Close) and DNSAddr
	// ClientID and ClientSecret are the only credentials the token endpoint
	// accepts. Set before use.
	ClientID, ClientSecret string
	// PageSize is the default (and maximum) list page size; default 100.
	PageSize int
	// DeletePolls is how many status polls a zone delete stays InProgress.
	DeletePolls int

	mu         sync.Mutex
	zones      map[string]*zone // by lower-case name, across resource groups
	tokens     map[string]bool
	counts     map[string]int
	throttle   int
	retryAfter time.Duration
	ops        map[string]*deleteOp
	seq        int
	beforePut  func()
}

type zone struct {
	sub, rg, name string
	etag          string
	tags          map[string]string
	sets          map[string]*armdns.RecordSet // key "TYPE/relname"
}

type deleteOp struct {
	zone  *zone
	polls int
}

// New starts a fake with one valid client ("fake-client"/"fake-secret").
func New() *Server {
	s := &Server{ClientID: "fake-client", ClientSecret: "fake-secret", PageSize: 100, DeletePolls: 1,
		zones: map[string]*zone{}, tokens: map[string]bool{}, counts: map[string]int{}, ops: map[string]*deleteOp{}}
	s.Front = fakedns.NewFront(http.HandlerFunc(s.serve), true, &s.mu, s.dnsZones)
	return s
}

// dnsZones is the fakedns.Source (called with s.mu held): every zone by name, each record set
// written as zone-file values (presentationValues) and parsed by fakedns. Alias record sets
// (targetResource, no records) are skipped. A zone whose delete is in progress is served (DNSAddr)
// until the delete completes.
func (s *Server) dnsZones() ([]fakedns.Zone, error) {
	var out []fakedns.Zone
	for _, name := range slices.Sorted(maps.Keys(s.zones)) {
		z := s.zones[name]
		fz := fakedns.Zone{Name: z.name}
		for _, key := range slices.Sorted(maps.Keys(z.sets)) {
			rtype, rel, _ := strings.Cut(key, "/")
			p := z.sets[key].Properties
			values := presentationValues(rtype, p)
			if len(values) == 0 || p.TTL == nil {
				continue
			}
			owner := z.name
			if rel != "@" {
				owner = rel + "." + z.name
			}
			rs, err := fakedns.RecordSet(owner, rtype, *p.TTL, values)
			if err != nil {
				return nil, fmt.Errorf("zone %s: %w", z.name, err)
			}
			fz.RecordSets = append(fz.RecordSets, rs)
		}
		out = append(out, fz)
	}
	return out, nil
}

// presentationValues writes the records of rtype that p holds as zone-file
// values (RFC 1035 §5.1): host names absolute, TXT as quoted, escaped
// character-strings (the ones Azure stores, in order), CAA values quoted.
func presentationValues(rtype string, p *armdns.RecordSetProperties) []string {
	var out []string
	abs := func(n *string) string { return strings.TrimSuffix(deref(n), ".") + "." }
	quote := func(v string) string { return `"` + provider.EscapeTXT(v) + `"` }
	switch rtype {
	case "A":
		for _, r := range p.ARecords {
			out = append(out, deref(r.IPv4Address))
		}
	case "AAAA":
		for _, r := range p.AaaaRecords {
			out = append(out, deref(r.IPv6Address))
		}
	case "CNAME":
		if p.CnameRecord != nil {
			out = append(out, abs(p.CnameRecord.Cname))
		}
	case "NS":
		for _, r := range p.NsRecords {
			out = append(out, abs(r.Nsdname))
		}
	case "PTR":
		for _, r := range p.PtrRecords {
			out = append(out, abs(r.Ptrdname))
		}
	case "MX":
		for _, r := range p.MxRecords {
			out = append(out, fmt.Sprintf("%d %s", deref(r.Preference), abs(r.Exchange)))
		}
	case "SRV":
		for _, r := range p.SrvRecords {
			out = append(out, fmt.Sprintf("%d %d %d %s", deref(r.Priority), deref(r.Weight), deref(r.Port), abs(r.Target)))
		}
	case "CAA":
		for _, r := range p.CaaRecords {
			out = append(out, fmt.Sprintf("%d %s %s", deref(r.Flags), deref(r.Tag), quote(deref(r.Value))))
		}
	case "TXT":
		for _, r := range p.TxtRecords {
			chunks := make([]string, 0, len(r.Value))
			for _, c := range r.Value {
				chunks = append(chunks, quote(deref(c)))
			}
			out = append(out, strings.Join(chunks, " "))
		}
	case "SOA":
		if r := p.SoaRecord; r != nil {
			out = append(out, fmt.Sprintf("%s %s %d %d %d %d %d", abs(r.Host), abs(r.Email), deref(r.SerialNumber),
				deref(r.RefreshTime), deref(r.RetryTime), deref(r.ExpireTime), deref(r.MinimumTTL)))
		}
	}
	return out
}

// deref is *p, or T's zero value for a nil p.
func deref[T any](p *T) T { return ptr.Deref(p, *new(T)) }

// Count returns how many requests of op were served: "Token",
// "ZonesCreateOrUpdate", "ZonesGet", "ZonesList", "ZonesDelete",
// "OperationStatus", "RecordSetsCreateOrUpdate", "RecordSetsGet",
// "RecordSetsDelete", "RecordSetsList" (one per page). Throttled requests
// count as "Throttled".
func (s *Server) Count(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[op]
}

// Throttle makes the next n ARM requests fail with 429 and Retry-After.
func (s *Server) Throttle(n int, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle, s.retryAfter = n, retryAfter
}

// BeforePut registers fn to run (without the lock) before each record-set
// PUT or DELETE is handled: tests use it to change data concurrently.
func (s *Server) BeforePut(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beforePut = fn
}

// AddForeignZone creates a zone outside dnsplane (no tags).
func (s *Server) AddForeignZone(sub, rg, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.newZone(sub, rg, strings.ToLower(name), nil)
}

// TouchRecordSet changes the ETag (and TTL, +1) of an existing record set,
// as a concurrent writer would. It reports whether the set exists.
func (s *Server) TouchRecordSet(zoneName, rtype, rel string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	z := s.zones[strings.ToLower(zoneName)]
	if z == nil {
		return false
	}
	rs := z.sets[strings.ToUpper(rtype)+"/"+strings.ToLower(rel)]
	if rs == nil {
		return false
	}
	ttl := *rs.Properties.TTL + 1
	rs.Properties.TTL = &ttl
	rs.Etag = s.etag()
	return true
}

func (s *Server) etag() *string {
	s.seq++
	e := fmt.Sprintf("\"etag-%08d\"", s.seq)
	return &e
}

func (s *Server) newZone(sub, rg, name string, tags map[string]string) *zone {
	z := &zone{sub: sub, rg: rg, name: name, etag: *s.etag(), tags: tags, sets: map[string]*armdns.RecordSet{}}
	ns := s.nameServers(name)
	var nsRecs []*armdns.NsRecord
	for _, n := range ns {
		nsRecs = append(nsRecs, &armdns.NsRecord{Nsdname: ptr.To(n)})
	}
	z.sets["NS/@"] = &armdns.RecordSet{Properties: &armdns.RecordSetProperties{TTL: ptr.To(int64(172800)), NsRecords: nsRecs}}
	z.sets["SOA/@"] = &armdns.RecordSet{Properties: &armdns.RecordSetProperties{TTL: ptr.To(int64(3600)), SoaRecord: &armdns.SoaRecord{
		Host: ptr.To(ns[0]), Email: ptr.To("azuredns-hostmaster.microsoft.com"), SerialNumber: ptr.To(int64(1)), RefreshTime: ptr.To(int64(3600)),
		RetryTime: ptr.To(int64(300)), ExpireTime: ptr.To(int64(2419200)), MinimumTTL: ptr.To(int64(300))}}}
	for _, rs := range z.sets {
		rs.Etag = s.etag()
	}
	s.zones[name] = z
	return z
}

func (s *Server) nameServers(string) []string {
	return []string{"ns1-01.azure-dns.com.", "ns2-01.azure-dns.net.", "ns3-01.azure-dns.org.", "ns4-01.azure-dns.info."}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func armError(w http.ResponseWriter, code int, ecode, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]string{"code": ecode, "message": msg}})
}

// origin is the https origin the client asked for (its Host header), as Azure builds the URLs it
// returns (issuer, token endpoint, operation and nextLink URLs) from the host it was reached at:
// a client behind a proxy (internal/testing/faultproxy) is sent back through the proxy.
func origin(r *http.Request) string { return "https://" + r.Host }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case strings.HasSuffix(path, "/oauth2/v2.0/token"):
		s.token(w, r)
		return
	case strings.HasSuffix(path, "/v2.0/.well-known/openid-configuration"):
		tenant := strings.Split(strings.Trim(path, "/"), "/")[0]
		base := origin(r) + "/" + tenant
		writeJSON(w, 200, map[string]any{"token_endpoint": base + "/oauth2/v2.0/token", "authorization_endpoint": base + "/oauth2/v2.0/authorize",
			"issuer": base + "/v2.0", "jwks_uri": base + "/discovery/v2.0/keys", "response_types_supported": []string{"code", "token"}})
		return
	case strings.HasSuffix(path, "/discovery/instance"):
		writeJSON(w, 200, map[string]any{"tenant_discovery_endpoint": origin(r) + "/common/v2.0/.well-known/openid-configuration",
			"metadata": []map[string]any{{"preferred_network": r.Host, "preferred_cache": r.Host, "aliases": []string{r.Host}}}})
		return
	}
	s.mu.Lock() // every branch below unlocks before writing the response
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "Bearer ") || !s.tokens[strings.TrimPrefix(auth, "Bearer ")] {
		s.mu.Unlock()
		armError(w, 401, "AuthenticationFailed", "missing or invalid bearer token")
		return
	}
	if s.throttle > 0 {
		s.throttle--
		s.counts["Throttled"]++
		ra := s.retryAfter
		s.mu.Unlock()
		w.Header().Set("Retry-After", strconv.Itoa(int(ra.Seconds())))
		armError(w, 429, "TooManyRequests", "too many requests")
		return
	}
	if strings.HasPrefix(path, "/fake/operations/") {
		s.counts["OperationStatus"]++
		s.operation(w, strings.TrimPrefix(path, "/fake/operations/"))
		return
	}
	if r.URL.Query().Get("api-version") != "2018-05-01" {
		s.mu.Unlock()
		armError(w, 400, "InvalidApiVersionParameter", "api-version must be 2018-05-01")
		return
	}
	// /subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Network/dnsZones[/{zone}[/{type}[/{name}]]]
	p := strings.Split(strings.Trim(path, "/"), "/")
	if len(p) < 7 || !strings.EqualFold(p[0], "subscriptions") || !strings.EqualFold(p[2], "resourceGroups") ||
		!strings.EqualFold(p[4], "providers") || !strings.EqualFold(p[5], "Microsoft.Network") || !strings.EqualFold(p[6], "dnsZones") {
		s.mu.Unlock()
		armError(w, 404, "InvalidResourceType", "unsupported path "+path)
		return
	}
	sub, rg := p[1], p[3]
	switch {
	case len(p) == 7 && r.Method == http.MethodGet:
		s.counts["ZonesList"]++
		s.listZones(w, r, sub, rg)
	case len(p) == 8:
		s.zone(w, r, sub, rg, strings.ToLower(p[7]))
	case len(p) == 9 && strings.EqualFold(p[8], "recordsets") || len(p) == 9 && strings.EqualFold(p[8], "all"):
		s.counts["RecordSetsList"]++
		s.listSets(w, r, sub, rg, strings.ToLower(p[7]))
	case len(p) == 10:
		s.recordSet(w, r, sub, rg, strings.ToLower(p[7]), strings.ToUpper(p[8]), strings.ToLower(p[9]))
	default:
		s.mu.Unlock()
		armError(w, 404, "InvalidResourceType", "unsupported path "+path)
	}
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_request"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts["Token"]++
	if r.PostForm.Get("client_id") != s.ClientID || r.PostForm.Get("client_secret") != s.ClientSecret {
		writeJSON(w, 401, map[string]any{"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided.", "error_codes": []int{7000215}})
		return
	}
	tok := fmt.Sprintf("fake-token-%d", len(s.tokens)+1)
	s.tokens[tok] = true
	writeJSON(w, 200, map[string]any{"token_type": "Bearer", "expires_in": 3600, "ext_expires_in": 3600, "access_token": tok})
}

func (s *Server) zoneID(z *zone) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/dnszones/%s", z.sub, z.rg, z.name)
}

func (s *Server) zoneJSON(z *zone) armdns.Zone {
	var ns []*string
	for _, n := range s.nameServers(z.name) {
		ns = append(ns, ptr.To(n))
	}
	out := armdns.Zone{ID: ptr.To(s.zoneID(z)), Name: ptr.To(z.name), Type: ptr.To("Microsoft.Network/dnszones"), Location: ptr.To("global"),
		Etag: ptr.To(z.etag), Properties: &armdns.ZoneProperties{NameServers: ns, ZoneType: ptr.To(armdns.ZoneTypePublic),
			MaxNumberOfRecordSets: ptr.To(int64(10000)), MaxNumberOfRecordsPerRecordSet: ptr.To(int64(20)), NumberOfRecordSets: ptr.To(int64(len(z.sets)))}}
	if z.tags != nil {
		out.Tags = map[string]*string{}
		for k, v := range z.tags {
			out.Tags[k] = ptr.To(v)
		}
	}
	return out
}

func (s *Server) lookup(sub, rg, name string) *zone {
	z := s.zones[name]
	if z == nil || z.sub != sub || !strings.EqualFold(z.rg, rg) {
		return nil
	}
	return z
}

func (s *Server) zone(w http.ResponseWriter, r *http.Request, sub, rg, name string) {
	z := s.lookup(sub, rg, name)
	switch r.Method {
	case http.MethodGet:
		s.counts["ZonesGet"]++
		if z == nil {
			s.mu.Unlock()
			armError(w, 404, "ResourceNotFound", "zone "+name+" not found")
			return
		}
		body := s.zoneJSON(z)
		s.mu.Unlock()
		writeJSON(w, 200, body)
	case http.MethodPut:
		s.counts["ZonesCreateOrUpdate"]++
		var in armdns.Zone
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Location == nil {
			s.mu.Unlock()
			armError(w, 400, "InvalidRequestFormat", "cannot parse zone (location required)")
			return
		}
		if other := s.zones[name]; other != nil && z == nil {
			s.mu.Unlock()
			armError(w, 409, "PreconditionFailed", "zone name exists in another resource group")
			return
		}
		if z != nil && r.Header.Get("If-None-Match") == "*" || z == nil && r.Header.Get("If-Match") != "" ||
			z != nil && r.Header.Get("If-Match") != "" && r.Header.Get("If-Match") != z.etag {
			s.mu.Unlock()
			armError(w, 412, "PreconditionFailed", "the zone's etag does not match")
			return
		}
		tags := map[string]string{}
		for k, v := range in.Tags {
			if strings.ContainsAny(k, "<>%&\\?/") {
				s.mu.Unlock()
				armError(w, 400, "InvalidTagNameCharacters", "tag name "+k+" has invalid characters")
				return
			}
			tags[k] = *v
		}
		code := 200
		if z == nil {
			z = s.newZone(sub, rg, name, tags)
			code = 201
		} else {
			z.tags, z.etag = tags, *s.etag()
		}
		body := s.zoneJSON(z)
		s.mu.Unlock()
		writeJSON(w, code, body)
	case http.MethodDelete:
		s.counts["ZonesDelete"]++
		if z == nil {
			s.mu.Unlock()
			w.WriteHeader(204) // ARM: deleting a missing resource succeeds
			return
		}
		id := strconv.Itoa(s.seq + 1)
		s.seq++
		s.ops[id] = &deleteOp{zone: z}
		s.mu.Unlock()
		w.Header().Set("Azure-AsyncOperation", origin(r)+"/fake/operations/"+id+"?api-version=2018-05-01")
		w.Header().Set("Location", origin(r)+"/fake/operations/"+id+"?api-version=2018-05-01&location=1")
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(202)
	default:
		s.mu.Unlock()
		armError(w, 405, "MethodNotAllowed", r.Method)
	}
}

func (s *Server) operation(w http.ResponseWriter, id string) {
	op := s.ops[id]
	if op == nil {
		s.mu.Unlock()
		armError(w, 404, "ResourceNotFound", "operation not found")
		return
	}
	op.polls++
	status := "InProgress"
	if op.polls > s.DeletePolls {
		status = "Succeeded"
		if s.zones[op.zone.name] == op.zone {
			delete(s.zones, op.zone.name)
		}
	}
	s.mu.Unlock()
	writeJSON(w, 200, map[string]string{"status": status})
}

// page returns items[skip:skip+top] and the nextLink.
func (s *Server) page(r *http.Request, n int) (lo, hi int, next *string) {
	top := s.PageSize
	if t, err := strconv.Atoi(r.URL.Query().Get("$top")); err == nil && t > 0 && t < top {
		top = t
	}
	lo, _ = strconv.Atoi(r.URL.Query().Get("$skiptoken"))
	lo = min(max(lo, 0), n)
	hi = min(lo+top, n)
	if hi < n {
		q := r.URL.Query()
		q.Set("$skiptoken", strconv.Itoa(hi))
		next = ptr.To(origin(r) + r.URL.Path + "?" + q.Encode())
	}
	return lo, hi, next
}

func (s *Server) listZones(w http.ResponseWriter, r *http.Request, sub, rg string) {
	var names []string
	for n, z := range s.zones {
		if z.sub == sub && strings.EqualFold(z.rg, rg) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	lo, hi, next := s.page(r, len(names))
	out := armdns.ZoneListResult{Value: []*armdns.Zone{}, NextLink: next}
	for _, n := range names[lo:hi] {
		zj := s.zoneJSON(s.zones[n])
		out.Value = append(out.Value, &zj)
	}
	s.mu.Unlock()
	writeJSON(w, 200, out)
}

func (s *Server) setJSON(z *zone, key string) armdns.RecordSet {
	rs := *z.sets[key]
	t, rel, _ := strings.Cut(key, "/")
	rs.ID = ptr.To(s.zoneID(z) + "/" + t + "/" + rel)
	rs.Name = ptr.To(rel)
	rs.Type = ptr.To("Microsoft.Network/dnszones/" + t)
	props := *rs.Properties
	fq := z.name + "."
	if rel != "@" {
		fq = rel + "." + fq
	}
	props.Fqdn = ptr.To(fq)
	props.ProvisioningState = ptr.To("Succeeded")
	rs.Properties = &props
	return rs
}

func (s *Server) listSets(w http.ResponseWriter, r *http.Request, sub, rg, name string) {
	z := s.lookup(sub, rg, name)
	if z == nil {
		s.mu.Unlock()
		armError(w, 404, "ResourceNotFound", "zone "+name+" not found")
		return
	}
	keys := make([]string, 0, len(z.sets))
	for k := range z.sets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	lo, hi, next := s.page(r, len(keys))
	out := armdns.RecordSetListResult{Value: []*armdns.RecordSet{}, NextLink: next}
	for _, k := range keys[lo:hi] {
		rs := s.setJSON(z, k)
		out.Value = append(out.Value, &rs)
	}
	s.mu.Unlock()
	writeJSON(w, 200, out)
}

var supported = map[string]bool{"A": true, "AAAA": true, "CAA": true, "CNAME": true, "MX": true, "NS": true, "PTR": true, "SOA": true, "SRV": true, "TXT": true}

// records returns how many records of rtype props holds, and whether props
// holds records of any other type.
func records(rtype string, p *armdns.RecordSetProperties) (n int, other bool) {
	counts := map[string]int{"A": len(p.ARecords), "AAAA": len(p.AaaaRecords), "CAA": len(p.CaaRecords), "MX": len(p.MxRecords),
		"NS": len(p.NsRecords), "PTR": len(p.PtrRecords), "SRV": len(p.SrvRecords), "TXT": len(p.TxtRecords)}
	if p.CnameRecord != nil {
		counts["CNAME"] = 1
	}
	if p.SoaRecord != nil {
		counts["SOA"] = 1
	}
	for t, c := range counts {
		if t != rtype && c > 0 {
			other = true
		}
	}
	return counts[rtype], other
}

func (s *Server) recordSet(w http.ResponseWriter, r *http.Request, sub, rg, name, rtype, rel string) {
	if r.Method == http.MethodPut || r.Method == http.MethodDelete {
		if fn := s.beforePut; fn != nil {
			s.mu.Unlock()
			fn()
			s.mu.Lock()
		}
	}
	z := s.lookup(sub, rg, name)
	if z == nil {
		s.mu.Unlock()
		armError(w, 404, "ParentResourceNotFound", "zone "+name+" not found")
		return
	}
	if !supported[rtype] {
		s.mu.Unlock()
		armError(w, 400, "BadRequest", "unsupported record type "+rtype)
		return
	}
	key := rtype + "/" + rel
	cur := z.sets[key]
	ifMatch, ifNone := r.Header.Get("If-Match"), r.Header.Get("If-None-Match")
	precondFailed := cur != nil && ifNone == "*" || ifMatch != "" && (cur == nil || *cur.Etag != ifMatch)
	switch r.Method {
	case http.MethodGet:
		s.counts["RecordSetsGet"]++
		if cur == nil {
			s.mu.Unlock()
			armError(w, 404, "NotFound", "record set "+key+" not found")
			return
		}
		body := s.setJSON(z, key)
		s.mu.Unlock()
		writeJSON(w, 200, body)
	case http.MethodPut:
		s.counts["RecordSetsCreateOrUpdate"]++
		var in armdns.RecordSet
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Properties == nil || in.Properties.TTL == nil {
			s.mu.Unlock()
			armError(w, 400, "BadRequest", "cannot parse record set (properties.TTL required)")
			return
		}
		n, other := records(rtype, in.Properties)
		if n == 0 || other || rtype == "SOA" && cur == nil {
			s.mu.Unlock()
			armError(w, 400, "BadRequest", fmt.Sprintf("record set %s must hold %s records only", key, rtype))
			return
		}
		if n > 20 {
			s.mu.Unlock()
			armError(w, 400, "BadRequest", "more than 20 records in a record set")
			return
		}
		if rtype == "CNAME" && len(z.setsAt(rel)) > 0 && cur == nil || rtype != "CNAME" && z.sets["CNAME/"+rel] != nil {
			s.mu.Unlock()
			armError(w, 409, "Conflict", "a CNAME record set cannot coexist with other record sets")
			return
		}
		if precondFailed {
			s.mu.Unlock()
			armError(w, 412, "PreconditionFailed", "the record set's etag does not match")
			return
		}
		code := 200
		if cur == nil {
			code = 201
		}
		props := *in.Properties
		props.Fqdn, props.ProvisioningState, props.TargetResource = nil, nil, nil
		z.sets[key] = &armdns.RecordSet{Etag: s.etag(), Properties: &props}
		body := s.setJSON(z, key)
		s.mu.Unlock()
		writeJSON(w, code, body)
	case http.MethodDelete:
		s.counts["RecordSetsDelete"]++
		if rel == "@" && (rtype == "SOA" || rtype == "NS") {
			s.mu.Unlock()
			armError(w, 400, "BadRequest", "the apex SOA and NS record sets cannot be deleted")
			return
		}
		if precondFailed {
			s.mu.Unlock()
			armError(w, 412, "PreconditionFailed", "the record set's etag does not match")
			return
		}
		if cur == nil {
			s.mu.Unlock()
			w.WriteHeader(204)
			return
		}
		delete(z.sets, key)
		s.mu.Unlock()
		w.WriteHeader(200)
	default:
		s.mu.Unlock()
		armError(w, 405, "MethodNotAllowed", r.Method)
	}
}

func (z *zone) setsAt(rel string) []string {
	var out []string
	for k := range z.sets {
		if _, r, _ := strings.Cut(k, "/"); r == rel {
			out = append(out, k)
		}
	}
	return out
}
