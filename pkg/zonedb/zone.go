package zonedb

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// Errors callers branch on (errors.Is).
var (
	// ErrZoneNotFound: the store serves no zone with that origin.
	ErrZoneNotFound = errors.New("zone not found")
	// ErrZoneExists: CreateZone for an origin the store already serves.
	ErrZoneExists = errors.New("zone already exists")
	// ErrInvalidZone: the origin is not a usable zone name.
	ErrInvalidZone = errors.New("invalid zone name")
	// ErrInvalidRRSet: a record set was rejected (outside the zone, SOA,
	// mixed types, duplicate records, CNAME beside other data, ...).
	ErrInvalidRRSet = errors.New("invalid record set")
	// ErrCorruptZone: Load could not read a zone's files.
	ErrCorruptZone = errors.New("corrupt zone files")
	// ErrStaleVersion: the Backend refused a write because the persisted zone changed since
	// the version the store wrote from (another writer, or a view not yet caught up). Nothing
	// was changed; re-read and retry.
	ErrStaleVersion = errors.New("persisted zone changed since this version")
)

// SetKey identifies a record set within a zone.
type SetKey struct {
	// Name is the owner: lower-case FQDN with the trailing dot.
	Name string
	// Type is the RR type (dns.TypeA, ...).
	Type uint16
	// SetIdentifier distinguishes weighted sets; "" for a plain set.
	SetIdentifier string
}

func (k SetKey) String() string {
	s := k.Name + "/" + dns.TypeToString[k.Type]
	if k.SetIdentifier != "" {
		s += "/" + k.SetIdentifier
	}
	return s
}

// RRSet is one record set as the store holds it.
type RRSet struct {
	// Name is the owner: lower-case FQDN with the trailing dot.
	Name string
	// Type is the RR type of every record in RRs.
	Type uint16
	// TTL in seconds; the store writes it into every record header.
	TTL uint32
	// SetIdentifier is "" for a plain set. Several sets of one name and type
	// with different identifiers are answered as described on dnsserver.Server.
	SetIdentifier string
	// Weight, when not nil, makes the set take part in the weighted choice
	// among the sets of its name and type. Requires SetIdentifier.
	Weight *int64
	// Labels are opaque to the server and persisted in the sidecar (the local
	// provider keeps external-dns' providerSpecific here).
	Labels map[string]string
	// RRs are the records. The store owns its copies: it overwrites owner,
	// class and TTL in the headers.
	RRs []dns.RR
}

// Key returns the set's (name, type, set identifier).
func (r RRSet) Key() SetKey {
	return SetKey{Name: r.Name, Type: r.Type, SetIdentifier: r.SetIdentifier}
}

// Clone returns a deep copy.
func (r RRSet) Clone() RRSet {
	c := r
	if r.Weight != nil {
		w := *r.Weight
		c.Weight = &w
	}
	c.Labels = maps.Clone(r.Labels)
	c.RRs = make([]dns.RR, len(r.RRs))
	for i, rr := range r.RRs {
		c.RRs[i] = dns.Copy(rr)
	}
	return c
}

// ZoneMeta is what a zone carries besides DNS data.
type ZoneMeta struct {
	// ID is the owner's (the local provider's) zone identifier.
	ID string `json:"id,omitempty"`
	// CallerReference is the idempotency key the zone was created with.
	CallerReference string `json:"callerReference,omitempty"`
	// Tags are free-form key/values.
	Tags map[string]string `json:"tags,omitempty"`
	// Created is when the zone was created; CreateZone fills it from the
	// store's clock when zero.
	Created time.Time `json:"created"`
}

func (m ZoneMeta) clone() ZoneMeta {
	m.Tags = maps.Clone(m.Tags)
	return m
}

// ZoneInfo describes a served zone.
type ZoneInfo struct {
	// Origin is the zone apex: lower-case FQDN with the trailing dot.
	Origin string
	Meta   ZoneMeta
	// Serial is the SOA serial; it moves forward on every change (Store.nextSerial: the clock's
	// Unix seconds, or the old serial + 1; RFC 1982).
	Serial uint32
	// NameServers are the targets of the apex NS set (FQDNs), sorted.
	NameServers []string
}

// zoneData is one immutable version of a zone. Writers build a new one;
// readers never see one change.
type zoneData struct {
	origin string
	meta   ZoneMeta
	soa    *dns.SOA
	sets   map[SetKey]*RRSet // every set but the SOA
	nodes  map[string]*Node  // owner -> node, including empty non-terminals and the apex
	// journal holds the changes that led to this version, for IXFR (journal.go); set by
	// Store.publish before the version is served, nil when empty.
	journal *journal
	// published is when the store first served this version (Store.publish); zero for a
	// version Load read. Store.Renew compares it with the start of a signing period.
	published time.Time
	// renewal: Store.Renew (or Install) served this version, not persisted, at a newer serial
	// than the persisted version it holds the data of, whose serial is persisted (Install
	// compares a Backend's versions with it).
	renewal   bool
	persisted uint32
}

// persistedSerial is the SOA serial z's data was persisted with: the renewed version's, for a
// renewal.
func (z *zoneData) persistedSerial() uint32 {
	if z.renewal {
		return z.persisted
	}
	return z.soa.Serial
}

// renewed returns a copy of z served at serial, its data unchanged (a renewal, not persisted).
func (z *zoneData) renewed(serial uint32) (*zoneData, error) {
	soa := dns.Copy(z.soa).(*dns.SOA)
	soa.Serial = serial
	nz, err := newZoneData(z.origin, z.meta, soa, z.sets)
	if err != nil {
		return nil, err
	}
	nz.renewal, nz.persisted = true, z.persistedSerial()
	return nz, nil
}

func (z *zoneData) info() ZoneInfo {
	info := ZoneInfo{Origin: z.origin, Meta: z.meta.clone(), Serial: z.soa.Serial}
	if n := z.nodes[z.origin]; n != nil {
		for _, rs := range n.sets[dns.TypeNS] {
			for _, rr := range rs.RRs {
				info.NameServers = append(info.NameServers, strings.ToLower(rr.(*dns.NS).Ns))
			}
		}
	}
	slices.Sort(info.NameServers)
	info.NameServers = slices.Compact(info.NameServers)
	return info
}

// sortedSets returns the zone's sets (without SOA) in a stable order: by
// owner, type, set identifier.
func (z *zoneData) sortedSets() []*RRSet {
	type keyed struct {
		key string // the owner's labels from the right, so names sort in canonical order
		rs  *RRSet
	}
	ks := make([]keyed, 0, len(z.sets))
	for _, rs := range z.sets {
		ks = append(ks, keyed{key: dnswire.CanonicalKey(rs.Name), rs: rs})
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		return cmp.Or(
			strings.Compare(a.key, b.key),
			cmp.Compare(a.rs.Type, b.rs.Type),
			cmp.Compare(a.rs.SetIdentifier, b.rs.SetIdentifier))
	})
	out := make([]*RRSet, len(ks))
	for i, k := range ks {
		out[i] = k.rs
	}
	return out
}

// newZoneData indexes sets into a zone version, after validating the
// zone-wide rules. sets is taken over, not copied.
func newZoneData(origin string, meta ZoneMeta, soa *dns.SOA, sets map[SetKey]*RRSet) (*zoneData, error) {
	// The SOA is served from the apex node but is not one of the sets.
	apex := &Node{sets: map[uint16][]*RRSet{dns.TypeSOA: {{Name: origin, Type: dns.TypeSOA, TTL: soa.Hdr.Ttl, RRs: []dns.RR{soa}}}}}
	z := &zoneData{origin: origin, meta: meta, soa: soa, sets: sets, nodes: map[string]*Node{origin: apex}}
	for _, rs := range sets {
		n := z.nodes[rs.Name]
		if n == nil {
			n = &Node{}
			z.nodes[rs.Name] = n
		}
		if n.sets == nil {
			n.sets = map[uint16][]*RRSet{}
		}
		n.sets[rs.Type] = append(n.sets[rs.Type], rs)
		// Every ancestor up to the apex exists, as an empty non-terminal if
		// nothing else.
		for p := dnswire.Parent(rs.Name); p != "" && p != origin && dns.IsSubDomain(origin, p); p = dnswire.Parent(p) {
			if _, ok := z.nodes[p]; ok {
				break
			}
			z.nodes[p] = &Node{}
		}
	}
	for name, n := range z.nodes {
		for _, list := range n.sets {
			slices.SortFunc(list, func(a, b *RRSet) int { return cmp.Compare(a.SetIdentifier, b.SetIdentifier) })
		}
		if err := validateNode(origin, name, n); err != nil {
			return nil, err
		}
	}
	return z, nil
}

// validateNode enforces the rules that span record sets of one owner.
func validateNode(origin, name string, n *Node) error {
	cnames := n.sets[dns.TypeCNAME]
	if len(cnames) == 0 {
		return nil
	}
	// RFC 1034 §3.6.2, RFC 2181 §10.1: a CNAME owner has no other data.
	if name == origin {
		return fmt.Errorf("%w: %s: CNAME at the zone apex (RFC 1034 §3.6.2)", ErrInvalidRRSet, name)
	}
	if len(n.sets) > 1 {
		return fmt.Errorf("%w: %s: CNAME beside other data (RFC 2181 §10.1)", ErrInvalidRRSet, name)
	}
	if len(cnames) > 1 {
		for _, rs := range cnames {
			if rs.Weight == nil {
				return fmt.Errorf("%w: %s: several CNAME sets that are not all weighted", ErrInvalidRRSet, name)
			}
		}
	}
	return nil
}

// unapplied returns why the server does not apply records of type t at owner, so that the store
// holds none ("" when it applies them). The server answers a record set as data; these mean
// processing it does not do, or that servers do not agree on, so a zone holding them would get
// answers that differ from every other server's:
//   - DNAME redirects the names below its owner (RFC 6672 §2.2, §3.2: DNAME, synthesised CNAME,
//     then the target's answer); served as data, those names would get NXDOMAIN;
//   - RRSIG, NSEC and NSEC3 are DNSSEC's signatures and denial of existence (RFC 4035 §3.1),
//     which a server adds to answers when the client sets DO; the server does not sign, and its
//     SOA serials (nextSerial) would make any stored signature of the SOA stale at once;
//   - an NS set at a wildcard owner has no agreed meaning (RFC 4592 §4.2): NSD answers it as
//     the data of the names it matches, Knot refers them to it.
func unapplied(owner string, t uint16) string {
	switch {
	case t == dns.TypeDNAME:
		return "DNAME redirection (RFC 6672) is not applied by the embedded server"
	case t == dns.TypeRRSIG, t == dns.TypeNSEC, t == dns.TypeNSEC3:
		return "the embedded server does no DNSSEC processing (RFC 4035 §3.1), so it stores no " + dns.TypeToString[t]
	case t == dns.TypeNS && strings.HasPrefix(owner, "*."):
		return "the embedded server does not serve NS at a wildcard owner (RFC 4592 §4.2: no agreed meaning)"
	}
	return ""
}

// canonicalOrigin validates a zone name and returns it lower-case with the
// trailing dot. Zone names become file names, so only letters, digits, '-'
// and '_' labels are accepted, and never the root.
func canonicalOrigin(name string) (string, error) {
	o := dnswire.Fqdn(name)
	if o == "." {
		return "", fmt.Errorf("%w: %q: the root zone is not served", ErrInvalidZone, name)
	}
	if _, ok := dns.IsDomainName(o); !ok || len(o) > 254 {
		return "", fmt.Errorf("%w: %q", ErrInvalidZone, name)
	}
	for _, label := range dns.SplitDomainName(o) {
		if label == "" || len(label) > 63 {
			return "", fmt.Errorf("%w: %q: bad label", ErrInvalidZone, name)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return "", fmt.Errorf("%w: %q: invalid character %q", ErrInvalidZone, name, r)
			}
		}
	}
	return o, nil
}
