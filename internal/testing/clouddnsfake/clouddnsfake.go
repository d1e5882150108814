// Package clouddnsfake is an in-memory httptest server for the subset of the
// Cloud DNS v1 REST API (JSON) that the dnsplane google provider uses:
// managedZones create/get/list/delete/patch (with description and labels;
// patch sets dnssecConfig, and dnsKeys.list lists the keys it made: dnssec.go),
// resourceRecordSets list with page tokens, and changes.create with atomic
// additions and deletions.
//
// Behaviour follows the Cloud DNS API reference and error messages page:
//   - a new zone gets an SOA and an NS set of 4 name servers at its apex;
//   - a change is all-or-nothing; a deletion must match the existing set
//     exactly (name, type, ttl, rrdatas), else 412 conditionNotMet; deleting a
//     set that does not exist is 404 notFound naming entity.change.deletions[i];
//     adding a set that exists (and is not deleted by the same change) is 409
//     alreadyExists;
//   - the documented per-change limits (cloud.google.com/dns/quotas: 1,000
//     additions, 1,000 deletions, 100,000 bytes of rrdata, 100 records per
//     set) give 403 quotaExceeded;
//   - deleting a zone that still holds sets other than the apex SOA/NS is 400
//     containerNotEmpty;
//   - a set may have a geo routing policy (routingPolicy.geo.items[], each a
//     location and rrdatas; the JSON of the SDK's RRSetRoutingPolicy,
//     RRSetRoutingPolicyGeoPolicy and RRSetRoutingPolicyGeoPolicyGeoPolicyItem)
//     instead of rrdatas: a location must be a Google Cloud region of Regions
//     and appear once per policy ("If there are multiple items with the same
//     location, an error is returned instead"), an item's rrdatas are
//     required (at most 100), and a set has rrdatas or a routing policy, not
//     both: else 400 invalid. A deletion matches a routing-policy set when its
//     TTL and items (location and rrdatas, in any order) are the same, else
//     412. Other routing policies (wrr, primaryBackup) and health-checked
//     items are 400 (not modelled). Routing-policy sets are not served over
//     DNS (they answer by the client's location).
//
// Paths are /dns/v1/projects/{project}/managedZones[...]; any project is
// accepted, but zones are kept per project.
//
// Credentials: POST /token is an OAuth 2.0 token endpoint for the one service
// account whose key file ServiceAccountJSON returns (the JWT bearer grant of
// RFC 7523, as Google's service-account flow uses it). An API request that
// carries an Authorization header must carry a token it issued, else 401
// (reason authError); requests without one are accepted, so that tests may
// use an unauthenticated client.
//
// The public zones are also served over DNS (DNSAddr).
package clouddnsfake

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/fakedns"
)

// Per-change limits (Cloud DNS "Quotas and limits").
const (
	MaxAdditionsPerChange   = 1000
	MaxDeletionsPerChange   = 1000
	MaxRrdataBytesPerChange = 100000
	MaxRecordsPerRRSet      = 100
)

// RRSet is a resource record set in the API's JSON form.
type RRSet struct {
	Kind          string         `json:"kind,omitempty"`
	Name          string         `json:"name"`
	Type          string         `json:"type"`
	TTL           int64          `json:"ttl,omitempty"`
	Rrdatas       []string       `json:"rrdatas,omitempty"`
	RoutingPolicy *RoutingPolicy `json:"routingPolicy,omitempty"`
}

// RoutingPolicy is a set's routing policy (RRSetRoutingPolicy); only geo is modelled, the others
// are kept to be refused.
type RoutingPolicy struct {
	Kind          string          `json:"kind,omitempty"`
	Geo           *GeoPolicy      `json:"geo,omitempty"`
	Wrr           json.RawMessage `json:"wrr,omitempty"`
	PrimaryBackup json.RawMessage `json:"primaryBackup,omitempty"`
	HealthCheck   string          `json:"healthCheck,omitempty"`
}

// GeoPolicy is RRSetRoutingPolicyGeoPolicy.
type GeoPolicy struct {
	Kind          string          `json:"kind,omitempty"`
	Items         []GeoPolicyItem `json:"items,omitempty"`
	EnableFencing bool            `json:"enableFencing,omitempty"`
}

// GeoPolicyItem is RRSetRoutingPolicyGeoPolicyGeoPolicyItem.
type GeoPolicyItem struct {
	Kind                 string          `json:"kind,omitempty"`
	Location             string          `json:"location,omitempty"`
	Rrdatas              []string        `json:"rrdatas,omitempty"`
	SignatureRrdatas     []string        `json:"signatureRrdatas,omitempty"`
	HealthCheckedTargets json.RawMessage `json:"healthCheckedTargets,omitempty"`
}

// Regions returns the Google Cloud regions a geo item's location may name (Google Cloud's region
// lists, "Geography and regions", as of 2026-12), sorted.
func Regions() []string {
	return []string{
		"africa-south1",
		"asia-east1", "asia-east2", "asia-northeast1", "asia-northeast2", "asia-northeast3", "asia-south1", "asia-south2",
		"asia-southeast1", "asia-southeast2", "asia-southeast3",
		"australia-southeast1", "australia-southeast2",
		"europe-central2", "europe-north1", "europe-north2", "europe-southwest1", "europe-west1", "europe-west10",
		"europe-west12", "europe-west2", "europe-west3", "europe-west4", "europe-west6", "europe-west8", "europe-west9",
		"me-central1", "me-central2", "me-west1",
		"northamerica-northeast1", "northamerica-northeast2", "northamerica-south1",
		"southamerica-east1", "southamerica-west1",
		"us-central1", "us-east1", "us-east4", "us-east5", "us-south1", "us-west1", "us-west2", "us-west3", "us-west4",
	}
}

// clone returns a deep copy of rs.
func (rs RRSet) clone() RRSet {
	c := rs
	c.Rrdatas = slices.Clone(rs.Rrdatas)
	if p := rs.RoutingPolicy; p != nil {
		cp := *p
		if p.Geo != nil {
			g := *p.Geo
			g.Items = nil
			for _, it := range p.Geo.Items {
				it.Rrdatas = slices.Clone(it.Rrdatas)
				g.Items = append(g.Items, it)
			}
			cp.Geo = &g
		}
		c.RoutingPolicy = &cp
	}
	return c
}

// ManagedZone is a managed zone in the API's JSON form.
type ManagedZone struct {
	Kind         string            `json:"kind,omitempty"`
	ID           string            `json:"id,omitempty"`
	Name         string            `json:"name"`
	DNSName      string            `json:"dnsName"`
	Description  string            `json:"description"`
	Labels       map[string]string `json:"labels,omitempty"`
	NameServers  []string          `json:"nameServers,omitempty"`
	CreationTime string            `json:"creationTime,omitempty"`
	Visibility   string            `json:"visibility,omitempty"`
	// DNSSECConfig is the zone's signing (managedZones.patch; dnssec.go).
	DNSSECConfig *DNSSECConfig `json:"dnssecConfig,omitempty"`
}

type change struct {
	Kind      string   `json:"kind,omitempty"`
	ID        string   `json:"id,omitempty"`
	Status    string   `json:"status,omitempty"`
	StartTime string   `json:"startTime,omitempty"`
	Additions []*RRSet `json:"additions,omitempty"`
	Deletions []*RRSet `json:"deletions,omitempty"`
}

type zone struct {
	mz      ManagedZone
	rrsets  []RRSet
	changes int
	keys    []*dnsKey // DNSSEC keys, made when signing is turned on (dnssec.go)
}

// Server is the fake. All methods are safe for concurrent use.
type Server struct {
	fakedns.Front // the API server (URL, Client, Close) and DNSAddr

	mu          sync.Mutex
	key         *rsa.PrivateKey             // the service account's key, made by ServiceAccountJSON
	tokens      map[string]bool             // access tokens issued by /token
	zones       map[string]map[string]*zone // project -> zone name -> zone
	seq         uint64
	pageSize    int
	throttle    int
	counts      map[string]int
	changeSizes []int
}

// New starts a fake server. Close it when done.
func New() *Server {
	s := &Server{zones: map[string]map[string]*zone{}, counts: map[string]int{}, pageSize: 100, tokens: map[string]bool{}}
	s.Front = fakedns.NewFront(http.HandlerFunc(s.serve), false, &s.mu, s.dnsZones)
	return s
}

// dnsZones is the fakedns.Source (called with s.mu held): every zone, rrdatas parsed as zone-file
// values (Cloud DNS stores them so, with RFC 1035 decimal escapes). Of zones with one DNS name (in
// several projects, or under several managed-zone names) the first by project, then managed-zone
// name, answers (DNSAddr).
func (s *Server) dnsZones() ([]fakedns.Zone, error) {
	var out []fakedns.Zone
	for _, project := range slices.Sorted(maps.Keys(s.zones)) {
		zones := s.zones[project]
		for _, name := range slices.Sorted(maps.Keys(zones)) {
			z := zones[name]
			fz := fakedns.Zone{Name: z.mz.DNSName}
			for _, rs := range z.rrsets {
				if rs.RoutingPolicy != nil {
					continue // answered by the client's location: not modelled over DNS
				}
				set, err := fakedns.RecordSet(rs.Name, rs.Type, rs.TTL, rs.Rrdatas)
				if err != nil {
					return nil, fmt.Errorf("project %s zone %s: %w", project, name, err)
				}
				fz.RecordSets = append(fz.RecordSets, set)
			}
			out = append(out, fz)
		}
	}
	return out, nil
}

// ServiceAccountEmail is the client_email of the service account in
// ServiceAccountJSON.
const ServiceAccountEmail = "dnsplane-test@fake-project.iam.gserviceaccount.com"

// ServiceAccountJSON returns a service-account key file (the JSON that
// GOOGLE_APPLICATION_CREDENTIALS_JSON holds) whose token_uri is this fake's
// /token and whose RSA key (2,048 bits, made on the first call) is the only
// one /token accepts. Every call returns the same key.
func (s *Server) ServiceAccountJSON() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key == nil {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(fmt.Sprintf("clouddnsfake: generate key: %v", err))
		}
		s.key = k
	}
	der, err := x509.MarshalPKCS8PrivateKey(s.key)
	if err != nil {
		panic(fmt.Sprintf("clouddnsfake: encode key: %v", err))
	}
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "fake-project", "private_key_id": "fake-key-1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": ServiceAccountEmail, "client_id": "100000000000000000001", "token_uri": s.URL + "/token",
	})
	return string(b)
}

// token is the OAuth 2.0 token endpoint for the JWT bearer grant (RFC 7523
// §2.1; Google "Using OAuth 2.0 for Server to Server Applications"): the
// assertion must be an RS256 JWT signed with the service account's key, whose
// iss is ServiceAccountEmail, aud this endpoint and exp in the future.
// Failures are 400 invalid_grant (RFC 6749 §5.2).
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts["token"]++
	invalid := func(desc string) {
		reply(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": desc})
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		reply(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type", "error_description": "Invalid grant_type"})
		return
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		invalid("Invalid JWT: malformed assertion")
		return
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err != nil || s.key == nil || rsa.VerifyPKCS1v15(&s.key.PublicKey, crypto.SHA256, sum[:], sig) != nil {
		invalid("Invalid JWT Signature.")
		return
	}
	var claims struct {
		Iss string `json:"iss"`
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(raw, &claims) != nil {
		invalid("Invalid JWT: claims do not decode")
		return
	}
	switch {
	case claims.Iss != ServiceAccountEmail:
		invalid("Invalid grant: account not found")
	case claims.Aud != s.URL+"/token":
		invalid("Invalid JWT: Failed audience check.")
	case claims.Exp < time.Now().Unix():
		invalid("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
	default:
		tok := fmt.Sprintf("fake-access-token-%d", len(s.tokens)+1)
		s.tokens[tok] = true
		reply(w, http.StatusOK, map[string]any{"access_token": tok, "expires_in": 3600, "token_type": "Bearer"})
	}
}

// SetPageSize sets the largest page the list methods return (default 100),
// whatever maxResults asks.
func (s *Server) SetPageSize(n int) { s.mu.Lock(); s.pageSize = max(1, n); s.mu.Unlock() }

// Throttle makes the next n requests fail with 429 rateLimitExceeded.
func (s *Server) Throttle(n int) { s.mu.Lock(); s.throttle = n; s.mu.Unlock() }

// Count returns how many requests of an operation were received, throttled
// ones included: "managedZones.create", "managedZones.get",
// "managedZones.list", "managedZones.delete", "rrsets.list",
// "changes.create".
func (s *Server) Count(op string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.counts[op] }

// ChangeSizes returns additions+deletions (rrsets) of every accepted
// changes.create, in order.
func (s *Server) ChangeSizes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.changeSizes)
}

// RRSets returns a copy of the record sets of the zone (name or ID) of project, sorted by name
// and type; nil for no such zone.
func (s *Server) RRSets(project, zone string) []RRSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	z := lookup(s.zones[project], zone)
	if z == nil {
		return nil
	}
	out := make([]RRSet, 0, len(z.rrsets))
	for _, rs := range z.rrsets {
		out = append(out, rs.clone())
	}
	return out
}

// AddZone creates a zone as another tool would, with the given name, DNS
// name and labels, and returns its numeric ID.
func (s *Server) AddZone(project, name, dnsName string, labels map[string]string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.create(project, ManagedZone{Name: name, DNSName: fqdn(dnsName), Description: "foreign", Labels: labels}).mz.ID
}

func fqdn(n string) string { return strings.TrimSuffix(strings.ToLower(n), ".") + "." }

func (s *Server) create(project string, mz ManagedZone) *zone {
	s.seq++
	mz.Kind = "dns#managedZone"
	mz.ID = strconv.FormatUint(1000000+s.seq, 10)
	mz.CreationTime = time.Now().UTC().Format(time.RFC3339Nano)
	mz.Visibility = "public"
	mz.NameServers = nil
	for i := 1; i <= 4; i++ {
		mz.NameServers = append(mz.NameServers, fmt.Sprintf("ns-cloud-%c%d.googledomains.com.", 'a'+rune(s.seq%5), i))
	}
	z := &zone{mz: mz}
	z.rrsets = []RRSet{
		{Kind: "dns#resourceRecordSet", Name: mz.DNSName, Type: "NS", TTL: 21600, Rrdatas: slices.Clone(mz.NameServers)},
		{Kind: "dns#resourceRecordSet", Name: mz.DNSName, Type: "SOA", TTL: 21600,
			Rrdatas: []string{mz.NameServers[0] + " cloud-dns-hostmaster.google.com. 1 21600 3600 259200 300"}},
	}
	if s.zones[project] == nil {
		s.zones[project] = map[string]*zone{}
	}
	s.zones[project][mz.Name] = z
	return z
}

type apiError struct {
	code           int
	reason, msg    string
	retryAfterSecs int
}

func (s *Server) fail(w http.ResponseWriter, e apiError) {
	if e.retryAfterSecs > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfterSecs))
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(e.code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": e.code, "message": e.msg,
		"errors": []map[string]string{{"domain": "global", "reason": e.reason, "message": e.msg}},
	}})
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

var (
	zoneNameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
	labelKeyRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	labelValRE = regexp.MustCompile(`^[a-z0-9_-]{0,63}$`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/token" && r.Method == http.MethodPost {
		s.token(w, r)
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// dns v1 projects {p} managedZones [{z} [rrsets|changes]]
	if len(parts) < 5 || parts[0] != "dns" || parts[1] != "v1" || parts[2] != "projects" || parts[4] != "managedZones" {
		s.fail(w, apiError{code: 404, reason: "notFound", msg: "unknown path " + r.URL.Path})
		return
	}
	project := parts[3]
	op := ""
	switch {
	case len(parts) == 5 && r.Method == http.MethodPost:
		op = "managedZones.create"
	case len(parts) == 5 && r.Method == http.MethodGet:
		op = "managedZones.list"
	case len(parts) == 6 && r.Method == http.MethodGet:
		op = "managedZones.get"
	case len(parts) == 6 && r.Method == http.MethodDelete:
		op = "managedZones.delete"
	case len(parts) == 7 && parts[6] == "rrsets" && r.Method == http.MethodGet:
		op = "rrsets.list"
	case len(parts) == 7 && parts[6] == "changes" && r.Method == http.MethodPost:
		op = "changes.create"
	case len(parts) == 6 && r.Method == http.MethodPatch:
		op = "managedZones.patch"
	case len(parts) == 7 && parts[6] == "dnsKeys" && r.Method == http.MethodGet:
		op = "dnsKeys.list"
	default:
		s.fail(w, apiError{code: 404, reason: "notFound", msg: r.Method + " " + r.URL.Path + " not supported"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[op]++
	if auth := r.Header.Get("Authorization"); auth != "" && !s.tokens[strings.TrimPrefix(auth, "Bearer ")] {
		s.fail(w, apiError{code: 401, reason: "authError", msg: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."})
		return
	}
	if s.throttle > 0 {
		s.throttle--
		s.fail(w, apiError{code: 429, reason: "rateLimitExceeded", msg: "Rate Limit Exceeded", retryAfterSecs: 2})
		return
	}
	zones := s.zones[project]
	var z *zone
	if len(parts) >= 6 {
		z = lookup(zones, parts[5])
		if z == nil {
			s.fail(w, apiError{code: 404, reason: "notFound", msg: fmt.Sprintf("The 'parameters.managedZone' resource named '%s' does not exist.", parts[5])})
			return
		}
	}
	q := r.URL.Query()
	switch op {
	case "managedZones.create":
		var mz ManagedZone
		if err := json.NewDecoder(r.Body).Decode(&mz); err != nil {
			s.fail(w, apiError{code: 400, reason: "parseError", msg: err.Error()})
			return
		}
		if e := validateZone(mz); e != nil {
			s.fail(w, *e)
			return
		}
		if zones[mz.Name] != nil {
			s.fail(w, apiError{code: 409, reason: "alreadyExists", msg: fmt.Sprintf("The resource 'entity.managedZone' named '%s' already exists", mz.Name)})
			return
		}
		mz.DNSName = strings.ToLower(mz.DNSName)
		reply(w, 200, s.create(project, mz).mz)
	case "managedZones.get":
		reply(w, 200, z.mz)
	case "managedZones.list":
		var all []ManagedZone
		for _, z := range zones {
			if dn := q.Get("dnsName"); dn == "" || fqdn(dn) == z.mz.DNSName {
				all = append(all, z.mz)
			}
		}
		slices.SortFunc(all, func(a, b ManagedZone) int { return strings.Compare(a.Name, b.Name) })
		replyPage(s, w, q, "dns#managedZonesListResponse", "managedZones", all)
	case "managedZones.delete":
		for _, rs := range z.rrsets {
			if !(rs.Name == z.mz.DNSName && (rs.Type == "SOA" || rs.Type == "NS")) {
				s.fail(w, apiError{code: 400, reason: "containerNotEmpty", msg: fmt.Sprintf("The resource named '%s' cannot be deleted because it is not empty", z.mz.Name)})
				return
			}
		}
		delete(zones, z.mz.Name)
		w.WriteHeader(http.StatusNoContent)
	case "rrsets.list":
		var all []RRSet
		for _, rs := range z.rrsets {
			if (q.Get("name") == "" || fqdn(q.Get("name")) == rs.Name) && (q.Get("type") == "" || q.Get("type") == rs.Type) {
				all = append(all, rs)
			}
		}
		replyPage(s, w, q, "dns#resourceRecordSetsListResponse", "rrsets", all)
	case "changes.create":
		var c change
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
			s.fail(w, apiError{code: 400, reason: "parseError", msg: err.Error()})
			return
		}
		if e := z.apply(c); e != nil {
			s.fail(w, *e)
			return
		}
		z.changes++
		s.changeSizes = append(s.changeSizes, len(c.Additions)+len(c.Deletions))
		c.Kind, c.ID, c.Status, c.StartTime = "dns#change", strconv.Itoa(z.changes), "done", time.Now().UTC().Format(time.RFC3339Nano)
		reply(w, 200, c)
	case "managedZones.patch":
		s.patchZone(w, r, z)
	case "dnsKeys.list":
		s.listKeys(w, q, z)
	}
}

func lookup(zones map[string]*zone, ref string) *zone {
	if z := zones[ref]; z != nil {
		return z
	}
	for _, z := range zones {
		if z.mz.ID == ref {
			return z
		}
	}
	return nil
}

// replyPage answers the page of all that q asks for (s.page), as the list response of kind with
// the items under field, or the page error.
func replyPage[T any](s *Server, w http.ResponseWriter, q map[string][]string, kind, field string, all []T) {
	page, next, e := s.page(len(all), q)
	if e != nil {
		s.fail(w, *e)
		return
	}
	reply(w, 200, map[string]any{"kind": kind, field: all[page[0]:page[1]], "nextPageToken": next})
}

// page returns the [start, end) window for pageToken/maxResults, and the
// next token ("" on the last page).
func (s *Server) page(n int, q map[string][]string) ([2]int, string, *apiError) {
	start := 0
	if t := first(q["pageToken"]); t != "" {
		v, err := strconv.Atoi(strings.TrimPrefix(t, "p"))
		if err != nil || !strings.HasPrefix(t, "p") || v < 0 || v > n {
			return [2]int{}, "", &apiError{code: 400, reason: "invalid", msg: "Invalid value for 'parameters.pageToken': '" + t + "'"}
		}
		start = v
	}
	size := s.pageSize
	if m, err := strconv.Atoi(first(q["maxResults"])); err == nil && m > 0 && m < size {
		size = m
	}
	end := min(n, start+size)
	next := ""
	if end < n {
		next = "p" + strconv.Itoa(end)
	}
	return [2]int{start, end}, next, nil
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func validateZone(mz ManagedZone) *apiError {
	switch {
	case !zoneNameRE.MatchString(mz.Name):
		return &apiError{code: 400, reason: "invalid", msg: fmt.Sprintf("Invalid value for 'entity.managedZone.name': '%s'", mz.Name)}
	case !strings.HasSuffix(mz.DNSName, ".") || len(mz.DNSName) < 2:
		return &apiError{code: 400, reason: "invalidFieldValue", msg: fmt.Sprintf("Invalid value for 'entity.managedZone.dnsName': '%s'", mz.DNSName)}
	case len(mz.Description) > 1024:
		return &apiError{code: 400, reason: "invalid", msg: "Invalid value for 'entity.managedZone.description'"}
	case len(mz.Labels) > 64:
		return &apiError{code: 400, reason: "invalid", msg: "too many labels"}
	}
	for k, v := range mz.Labels {
		if !labelKeyRE.MatchString(k) || !labelValRE.MatchString(v) {
			return &apiError{code: 400, reason: "invalid", msg: fmt.Sprintf("Invalid value for 'entity.managedZone.labels': %q=%q", k, v)}
		}
	}
	return nil
}

func key(rs *RRSet) string { return fqdn(rs.Name) + " " + rs.Type }

func sameSet(a, b *RRSet) bool {
	if a.TTL != b.TTL || !sameData(a.Rrdatas, b.Rrdatas) || (a.RoutingPolicy == nil) != (b.RoutingPolicy == nil) {
		return false
	}
	if a.RoutingPolicy == nil {
		return true
	}
	ga, gb := a.RoutingPolicy.Geo, b.RoutingPolicy.Geo
	if ga == nil || gb == nil || ga.EnableFencing != gb.EnableFencing || len(ga.Items) != len(gb.Items) {
		return false
	}
	items := map[string][]string{}
	for _, it := range ga.Items {
		items[it.Location] = it.Rrdatas
	}
	for _, it := range gb.Items {
		if d, ok := items[it.Location]; !ok || !sameData(d, it.Rrdatas) {
			return false
		}
	}
	return true
}

func sameData(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// checkPolicy checks a set's routing policy as the API does (see the package comment), counting
// its items' rrdata bytes into size.
func checkPolicy(rs *RRSet, field string, j int, size *int) *apiError {
	p := rs.RoutingPolicy
	invalid := func(f, msg string) *apiError {
		return &apiError{code: 400, reason: "invalid", msg: fmt.Sprintf("Invalid value for 'entity.change.%s[%d].%s': %s", field, j, f, msg)}
	}
	switch {
	case len(rs.Rrdatas) > 0:
		return invalid("rrdata", "a resource record set with a routing policy has no rrdatas of its own")
	case p.Geo == nil || len(p.Wrr) > 0 || len(p.PrimaryBackup) > 0 || p.HealthCheck != "":
		return invalid("routingPolicy", "only a geo routing policy is supported by this fake")
	case len(p.Geo.Items) == 0:
		return invalid("routingPolicy.geo.items", "a geo routing policy needs at least one item")
	}
	seen := map[string]bool{}
	regions := Regions()
	for i, it := range p.Geo.Items {
		f := fmt.Sprintf("routingPolicy.geo.items[%d]", i)
		switch {
		case !slices.Contains(regions, it.Location):
			return invalid(f+".location", fmt.Sprintf("'%s' is not a Google Cloud region", it.Location))
		case seen[it.Location]:
			return invalid(f+".location", fmt.Sprintf("multiple items with the location '%s'", it.Location))
		case len(it.HealthCheckedTargets) > 0:
			return invalid(f+".healthCheckedTargets", "not supported by this fake")
		case len(it.Rrdatas) == 0:
			return &apiError{code: 400, reason: "required", msg: fmt.Sprintf("Required field 'entity.change.%s[%d].%s.rrdata' not specified", field, j, f)}
		case len(it.Rrdatas) > MaxRecordsPerRRSet:
			return &apiError{code: 403, reason: "quotaExceeded", msg: "The change would exceed quota for resource records per rrset."}
		}
		seen[it.Location] = true
		for _, d := range it.Rrdatas {
			*size += len(d)
		}
	}
	return nil
}

// apply checks c against the zone and applies it atomically.
func (z *zone) apply(c change) *apiError {
	if len(c.Additions)+len(c.Deletions) == 0 {
		return &apiError{code: 400, reason: "required", msg: "The change must contain at least one addition or deletion."}
	}
	if len(c.Additions) > MaxAdditionsPerChange || len(c.Deletions) > MaxDeletionsPerChange {
		return &apiError{code: 403, reason: "quotaExceeded", msg: "The change would exceed quota for additions or deletions per change."}
	}
	size := 0
	for i, list := range [][]*RRSet{c.Deletions, c.Additions} {
		field := [2]string{"deletions", "additions"}[i]
		for j, rs := range list {
			if rs == nil || rs.Name == "" || rs.Type == "" || !strings.HasSuffix(rs.Name, ".") {
				return &apiError{code: 400, reason: "invalid", msg: fmt.Sprintf("Invalid value for 'entity.change.%s[%d].name'", field, j)}
			}
			if name := strings.ToLower(rs.Name); name != z.mz.DNSName && !strings.HasSuffix(name, "."+z.mz.DNSName) {
				return &apiError{code: 400, reason: "invalid", msg: fmt.Sprintf("Invalid value for 'entity.change.%s[%d].name': '%s' is not within the zone", field, j, rs.Name)}
			}
			if rs.RoutingPolicy != nil {
				if e := checkPolicy(rs, field, j, &size); e != nil {
					return e
				}
			} else if len(rs.Rrdatas) == 0 {
				return &apiError{code: 400, reason: "required", msg: fmt.Sprintf("Required field 'entity.change.%s[%d].rrdata' not specified", field, j)}
			}
			if len(rs.Rrdatas) > MaxRecordsPerRRSet {
				return &apiError{code: 403, reason: "quotaExceeded", msg: "The change would exceed quota for resource records per rrset."}
			}
			if rs.TTL < 0 {
				return &apiError{code: 400, reason: "invalid", msg: fmt.Sprintf("Invalid value for 'entity.change.%s[%d].ttl'", field, j)}
			}
			for _, d := range rs.Rrdatas {
				size += len(d)
			}
		}
	}
	if size > MaxRrdataBytesPerChange {
		return &apiError{code: 403, reason: "quotaExceeded", msg: "The change would exceed quota for total rrdata size per change."}
	}
	cur := map[string]int{}
	for i := range z.rrsets {
		cur[key(&z.rrsets[i])] = i
	}
	deleted := map[string]bool{}
	for j, d := range c.Deletions {
		k := key(d)
		i, ok := cur[k]
		if !ok || deleted[k] {
			return &apiError{code: 404, reason: "notFound", msg: fmt.Sprintf("The 'entity.change.deletions[%d]' resource named '%s (%s)' does not exist.", j, d.Name, d.Type)}
		}
		if !sameSet(&z.rrsets[i], d) {
			return &apiError{code: 412, reason: "conditionNotMet", msg: fmt.Sprintf("Precondition not met for 'entity.change.deletions[%d]'", j)}
		}
		deleted[k] = true
	}
	added := map[string]bool{}
	for j, a := range c.Additions {
		k := key(a)
		if _, exists := cur[k]; (exists && !deleted[k]) || added[k] {
			return &apiError{code: 409, reason: "alreadyExists", msg: fmt.Sprintf("The resource 'entity.change.additions[%d]' named '%s (%s)' already exists", j, a.Name, a.Type)}
		}
		added[k] = true
	}
	next := make([]RRSet, 0, len(z.rrsets)+len(c.Additions))
	for _, rs := range z.rrsets {
		if !deleted[key(&rs)] {
			next = append(next, rs)
		}
	}
	for _, a := range c.Additions {
		n := a.clone()
		n.Kind, n.Name = "dns#resourceRecordSet", strings.ToLower(a.Name)
		if p := n.RoutingPolicy; p != nil {
			p.Kind = "dns#rRSetRoutingPolicy"
			p.Geo.Kind = "dns#rRSetRoutingPolicyGeoPolicy"
			for i := range p.Geo.Items {
				p.Geo.Items[i].Kind = "dns#rRSetRoutingPolicyGeoPolicyGeoPolicyItem"
			}
		}
		next = append(next, n)
	}
	slices.SortStableFunc(next, func(a, b RRSet) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Type, b.Type)
	})
	z.rrsets = next
	return nil
}
