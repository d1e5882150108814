package dnssec

import (
	"bytes"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// Chain is the authenticated denial of existence of one zone version: its NSEC chain (RFC 4034
// §4, RFC 4035 §3.1.3) or its NSEC3 chain (RFC 5155 §7), computed over the zone's names.
// Its proofs are unsigned NSEC or NSEC3 records; the server signs them (Policy.Sign).
type Chain struct {
	origin string
	ttl    uint32
	nsec3  *NSEC3Params
	exists map[string]bool     // every name of the zone, empty non-terminals included
	types  map[string][]uint16 // the types each NSEC or NSEC3 lists, by owner name
	owners []string            // NSEC: the names with data, in canonical order
	keys   [][]byte            // NSEC: owners' canonical sort keys
	hashes []string            // NSEC3: every name's hash, ascending (base32hex)
	byHash map[string]string   // NSEC3: name of each hash
}

// NewChain returns the chain of the zone origin (a lower-case FQDN) whose authoritative names
// and delegation points are the keys of names, each with the types of its data (a delegation
// point: NS, and DS when there is one). Names below a delegation point must not be in names;
// the empty non-terminals between names and the apex are added. ttl is the NSEC or NSEC3 TTL:
// min(SOA TTL, SOA MINIMUM) (RFC 9077). params nil gives NSEC.
func NewChain(origin string, names map[string][]uint16, params *NSEC3Params, ttl uint32) *Chain {
	c := &Chain{origin: origin, ttl: ttl, nsec3: params, exists: map[string]bool{origin: true}, types: map[string][]uint16{}}
	for name, types := range names {
		c.exists[name] = true
		for p := parent(name); p != "" && dns.IsSubDomain(origin, p) && !c.exists[p]; p = parent(p) {
			c.exists[p] = true
		}
		c.types[name] = c.bitmap(name, types)
	}
	if _, ok := c.types[origin]; !ok {
		c.types[origin] = c.bitmap(origin, nil)
	}
	if params == nil {
		c.sortOwners()
		return c
	}
	c.byHash = map[string]string{}
	for name := range c.exists {
		h := dns.HashName(name, dns.SHA1, params.Iterations, params.Salt)
		c.byHash[h] = name
		c.hashes = append(c.hashes, h)
	}
	slices.Sort(c.hashes)
	return c
}

// bitmap returns the types the NSEC or NSEC3 of name lists: its own, RRSIG when something at
// name is signed (every NSEC is; at a delegation point only a DS), NSEC with NSEC, and DNSKEY,
// CDS and CDNSKEY (and NSEC3PARAM with NSEC3) at the apex (RFC 4034 §4.1.2, RFC 5155 §3.2,
// RFC 7344: a signed zone always publishes its CDS and CDNSKEY, KeySet.CDS).
func (c *Chain) bitmap(name string, types []uint16) []uint16 {
	out := slices.Clone(types)
	if name == c.origin {
		out = append(out, dns.TypeDNSKEY, dns.TypeCDS, dns.TypeCDNSKEY)
		if c.nsec3 != nil {
			out = append(out, dns.TypeNSEC3PARAM)
		}
	}
	delegation := name != c.origin && slices.Contains(types, dns.TypeNS)
	signed := len(out) > 0 && (!delegation || slices.Contains(types, dns.TypeDS))
	if c.nsec3 == nil {
		out = append(out, dns.TypeNSEC, dns.TypeRRSIG)
	} else if signed {
		out = append(out, dns.TypeRRSIG)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// sortOwners puts the names with data in canonical order (RFC 4034 §6.1), each beside its sort
// key, so that the comparisons look nothing up.
func (c *Chain) sortOwners() {
	type owner struct {
		name string
		key  []byte
	}
	all := make([]owner, 0, len(c.types))
	for name := range c.types {
		all = append(all, owner{name, CanonicalKey(name)})
	}
	slices.SortFunc(all, func(a, b owner) int { return bytes.Compare(a.key, b.key) })
	c.owners, c.keys = make([]string, len(all)), make([][]byte, len(all))
	for i, o := range all {
		c.owners[i], c.keys[i] = o.name, o.key
	}
}

// CanonicalKey returns a byte string whose order is the canonical order of DNS names (RFC 4034
// §6.1): the name's labels from the root down, lowercased, each ended by a zero byte. A label
// with a zero byte sorts as if it ended there; zonedb names hold none.
func CanonicalKey(name string) []byte {
	var wire [256]byte
	n, err := dns.PackDomainName(dns.Fqdn(name), wire[:], 0, nil, false)
	if err != nil {
		return []byte(strings.ToLower(name))
	}
	var labels [][]byte
	for off := 0; off < n && wire[off] != 0; off += int(wire[off]) + 1 {
		labels = append(labels, wire[off+1:off+1+int(wire[off])])
	}
	out := make([]byte, 0, n+1)
	for i := len(labels) - 1; i >= 0; i-- {
		out = append(out, bytes.ToLower(labels[i])...)
		out = append(out, 0)
	}
	return out
}

// parent returns name without its first label, "" for the root.
func parent(name string) string {
	off, end := dns.NextLabel(name, 0)
	if end {
		return ""
	}
	return name[off:]
}

// ClosestEncloser returns the nearest ancestor of qname that exists in the zone (RFC 5155
// §7.2.1; the apex for any name in the zone).
func (c *Chain) ClosestEncloser(qname string) string {
	for p := parent(qname); p != ""; p = parent(p) {
		if c.exists[p] {
			return p
		}
	}
	return c.origin
}

// nextCloser returns the name one label longer than ce on the way to qname.
func nextCloser(qname, ce string) string {
	n := dns.CountLabel(qname) - dns.CountLabel(ce) - 1
	idx := dns.Split(qname)
	return qname[idx[n]:]
}

// NXDomain proves that qname does not exist and no wildcard could answer it: with NSEC the
// records covering qname and "*.<closest encloser>" (RFC 4035 §3.1.3.2); with NSEC3 the closest
// encloser proof and the record covering the wildcard (RFC 5155 §7.2.2).
func (c *Chain) NXDomain(qname string) []dns.RR {
	ce := c.ClosestEncloser(qname)
	if c.nsec3 == nil {
		return dedupe(c.nsecCovering(qname), c.nsecCovering("*."+ce))
	}
	return dedupe(c.nsec3Of(ce), c.nsec3Covering(nextCloser(qname, ce)), c.nsec3Covering("*."+ce))
}

// NoData proves that qname exists without data of the asked type: its own NSEC or NSEC3, and
// for an empty non-terminal under NSEC the record covering it (RFC 4035 §3.1.3.1, RFC 5155
// §7.2.3 and §7.2.4, a DS query at a delegation without DS included).
func (c *Chain) NoData(qname string) []dns.RR {
	if c.nsec3 != nil {
		return []dns.RR{c.nsec3Of(qname)}
	}
	if _, ok := c.types[qname]; ok {
		return []dns.RR{c.nsecAt(qname)}
	}
	return []dns.RR{c.nsecCovering(qname)}
}

// Wildcard proves that no name closer to qname than its closest encloser ce exists, for an
// answer synthesised from "*.ce" (RFC 4035 §3.1.3.3, RFC 5155 §7.2.6).
func (c *Chain) Wildcard(qname, ce string) []dns.RR {
	if c.nsec3 == nil {
		return []dns.RR{c.nsecCovering(qname)}
	}
	return []dns.RR{c.nsec3Covering(nextCloser(qname, ce))}
}

// WildcardNoData proves that qname does not exist and "*.ce" exists without the asked type
// (RFC 4035 §3.1.3.4, RFC 5155 §7.2.5).
func (c *Chain) WildcardNoData(qname, ce string) []dns.RR {
	if c.nsec3 == nil {
		return dedupe(c.nsecCovering(qname), c.nsecAt("*."+ce))
	}
	return dedupe(c.nsec3Of(ce), c.nsec3Covering(nextCloser(qname, ce)), c.nsec3Of("*."+ce))
}

// dedupe drops repeated records (one NSEC may cover both names of a proof).
func dedupe(rrs ...dns.RR) []dns.RR {
	var out []dns.RR
	for _, rr := range rrs {
		if rr != nil && !slices.ContainsFunc(out, func(o dns.RR) bool { return dns.IsDuplicate(o, rr) }) {
			out = append(out, rr)
		}
	}
	return out
}

// nsecAt returns the NSEC of owner, a name with data.
func (c *Chain) nsecAt(owner string) dns.RR {
	i, ok := slices.BinarySearchFunc(c.keys, CanonicalKey(owner), bytes.Compare)
	if !ok {
		return nil
	}
	return c.nsec(i)
}

// nsecCovering returns the NSEC whose owner is the last name with data before name in
// canonical order, wrapping to the last one (whose next name is the apex).
func (c *Chain) nsecCovering(name string) dns.RR {
	i, _ := slices.BinarySearchFunc(c.keys, CanonicalKey(name), bytes.Compare)
	return c.nsec((i - 1 + len(c.owners)) % len(c.owners))
}

func (c *Chain) nsec(i int) dns.RR {
	owner := c.owners[i]
	return &dns.NSEC{
		Hdr:        dns.RR_Header{Name: owner, Rrtype: dns.TypeNSEC, Class: dns.ClassINET, Ttl: c.ttl},
		NextDomain: c.owners[(i+1)%len(c.owners)],
		TypeBitMap: c.types[owner],
	}
}

// nsec3Of returns the NSEC3 whose owner is the hash of name, which exists.
func (c *Chain) nsec3Of(name string) dns.RR {
	h := dns.HashName(name, dns.SHA1, c.nsec3.Iterations, c.nsec3.Salt)
	i, ok := slices.BinarySearch(c.hashes, h)
	if !ok {
		return nil
	}
	return c.nsec3Rec(i)
}

// nsec3Covering returns the NSEC3 whose hash interval holds the hash of name.
func (c *Chain) nsec3Covering(name string) dns.RR {
	h := dns.HashName(name, dns.SHA1, c.nsec3.Iterations, c.nsec3.Salt)
	i, _ := slices.BinarySearch(c.hashes, h)
	return c.nsec3Rec((i - 1 + len(c.hashes)) % len(c.hashes))
}

func (c *Chain) nsec3Rec(i int) dns.RR {
	h := c.hashes[i]
	next := c.hashes[(i+1)%len(c.hashes)]
	return &dns.NSEC3{
		Hdr:        dns.RR_Header{Name: strings.ToLower(h) + "." + c.origin, Rrtype: dns.TypeNSEC3, Class: dns.ClassINET, Ttl: c.ttl},
		Hash:       dns.SHA1,
		Iterations: c.nsec3.Iterations,
		SaltLength: uint8(len(c.nsec3.Salt) / 2),
		Salt:       c.nsec3.Salt,
		HashLength: 20,
		NextDomain: next,
		TypeBitMap: c.types[c.byHash[h]],
	}
}

// All returns every record of the chain, in canonical order (NSEC) or by hash (NSEC3): what a
// full zone transfer of the signed zone carries.
func (c *Chain) All() []dns.RR {
	var out []dns.RR
	if c.nsec3 == nil {
		for i := range c.owners {
			out = append(out, c.nsec(i))
		}
		return out
	}
	for i := range c.hashes {
		out = append(out, c.nsec3Rec(i))
	}
	return out
}

// NSEC3PARAM returns the zone's NSEC3PARAM record (RFC 5155 §4), or nil with NSEC.
func (c *Chain) NSEC3PARAM() dns.RR {
	if c.nsec3 == nil {
		return nil
	}
	return c.nsec3.Record(c.origin)
}

// Record returns the NSEC3PARAM record of the zone origin with these parameters, TTL 0.
func (p NSEC3Params) Record(origin string) *dns.NSEC3PARAM {
	return &dns.NSEC3PARAM{
		Hdr:        dns.RR_Header{Name: origin, Rrtype: dns.TypeNSEC3PARAM, Class: dns.ClassINET},
		Hash:       dns.SHA1,
		Iterations: p.Iterations,
		SaltLength: uint8(len(p.Salt) / 2),
		Salt:       p.Salt,
	}
}
