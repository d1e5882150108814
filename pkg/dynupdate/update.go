package dynupdate

import (
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Op is what one update RR does (RFC 2136 §2.5).
type Op int

const (
	// OpAdd adds a record to an RRset (§2.5.1: the zone's class).
	OpAdd Op = iota
	// OpDeleteRRset deletes an RRset (§2.5.2: class ANY, a type, no RDATA).
	OpDeleteRRset
	// OpDeleteName deletes every RRset of a name (§2.5.3: class ANY, type ANY).
	OpDeleteName
	// OpDeleteRR deletes one record from an RRset (§2.5.4: class NONE).
	OpDeleteRR
)

// Change is one update RR, read.
type Change struct {
	Op Op
	// Name is the owner name, a lower-case FQDN.
	Name string
	// Type is the record type; dns.TypeANY for OpDeleteName.
	Type uint16
	// TTL is the added record's TTL in seconds (OpAdd).
	TTL uint32
	// Value is the record's value in a DNSEndpoint target's format (Value), for OpAdd and
	// OpDeleteRR.
	Value string
}

// Update is an UPDATE message, read (RFC 2136 §2).
type Update struct {
	// Zone is the zone section's name, a lower-case FQDN.
	Zone string
	// Prereqs are the prerequisite RRs as sent (§2.4), checked by CheckPrereqs.
	Prereqs []dns.RR
	// Changes are the update RRs in order (§2.5).
	Changes []Change
}

// Parse reads an UPDATE message's zone section and, for a zone it may answer, its
// prerequisite and update sections. It returns the update and dns.RcodeSuccess, or the rcode
// of a message it must refuse: FORMERR for a zone section that is not one SOA question of
// class IN (§3.1.1), for a prerequisite or update RR of a class or shape RFC 2136 does not
// allow (§3.2, §3.4.1.2), or whose RDATA has no DNSEndpoint form; NOTZONE for an RR outside
// the zone (§3.2, §3.4.1.3). Policy and authority are checked by the caller.
func Parse(m *dns.Msg) (Update, int) {
	if len(m.Question) != 1 || m.Question[0].Qtype != dns.TypeSOA || m.Question[0].Qclass != dns.ClassINET {
		return Update{}, dns.RcodeFormatError
	}
	u := Update{Zone: dnswire.Fqdn(m.Question[0].Name)}
	for _, rr := range m.Answer { // the prerequisite section
		h := rr.Header()
		if !dns.IsSubDomain(u.Zone, strings.ToLower(h.Name)) {
			return Update{}, dns.RcodeNotZone
		}
		if rcode := prereqShape(rr); rcode != dns.RcodeSuccess {
			return Update{}, rcode
		}
		u.Prereqs = append(u.Prereqs, rr)
	}
	for _, rr := range m.Ns { // the update section
		c, rcode := change(u.Zone, rr)
		if rcode != dns.RcodeSuccess {
			return Update{}, rcode
		}
		u.Changes = append(u.Changes, c)
	}
	return u, dns.RcodeSuccess
}

// change reads one update RR (§3.4.1.2, §3.4.1.3).
func change(zone string, rr dns.RR) (Change, int) {
	h := rr.Header()
	name := dnswire.Fqdn(h.Name)
	if !dns.IsSubDomain(zone, name) {
		return Change{}, dns.RcodeNotZone
	}
	empty := isEmpty(rr)
	switch h.Class {
	case dns.ClassINET:
		if h.Rrtype == dns.TypeANY || isMeta(h.Rrtype) || empty {
			return Change{}, dns.RcodeFormatError
		}
		v, ok := Value(rr)
		if !ok {
			return Change{}, dns.RcodeFormatError
		}
		return Change{Op: OpAdd, Name: name, Type: h.Rrtype, TTL: h.Ttl, Value: v}, dns.RcodeSuccess
	case dns.ClassANY:
		if h.Ttl != 0 || !empty || (isMeta(h.Rrtype) && h.Rrtype != dns.TypeANY) {
			return Change{}, dns.RcodeFormatError
		}
		if h.Rrtype == dns.TypeANY {
			return Change{Op: OpDeleteName, Name: name, Type: dns.TypeANY}, dns.RcodeSuccess
		}
		return Change{Op: OpDeleteRRset, Name: name, Type: h.Rrtype}, dns.RcodeSuccess
	case dns.ClassNONE:
		if h.Ttl != 0 || h.Rrtype == dns.TypeANY || isMeta(h.Rrtype) || empty {
			return Change{}, dns.RcodeFormatError
		}
		v, ok := Value(rr)
		if !ok {
			return Change{}, dns.RcodeFormatError
		}
		return Change{Op: OpDeleteRR, Name: name, Type: h.Rrtype, Value: v}, dns.RcodeSuccess
	}
	return Change{}, dns.RcodeFormatError
}

// prereqShape checks one prerequisite RR's class, TTL and RDATA (§3.2).
func prereqShape(rr dns.RR) int {
	h := rr.Header()
	if h.Ttl != 0 {
		return dns.RcodeFormatError
	}
	switch h.Class {
	case dns.ClassANY, dns.ClassNONE:
		if !isEmpty(rr) || (isMeta(h.Rrtype) && h.Rrtype != dns.TypeANY) {
			return dns.RcodeFormatError
		}
		return dns.RcodeSuccess
	case dns.ClassINET:
		if h.Rrtype == dns.TypeANY || isMeta(h.Rrtype) || isEmpty(rr) {
			return dns.RcodeFormatError
		}
		if _, ok := Value(rr); !ok {
			return dns.RcodeFormatError
		}
		return dns.RcodeSuccess
	}
	return dns.RcodeFormatError
}

// isEmpty reports whether rr has no RDATA: RDLENGTH 0 as received (miekg/dns then leaves
// the typed RR's fields zero), or an *dns.ANY.
func isEmpty(rr dns.RR) bool {
	if _, ok := rr.(*dns.ANY); ok {
		return true
	}
	return rr.Header().Rdlength == 0
}

// isMeta reports whether t is a meta type or QTYPE (RFC 6895 §3.1: 128-255, OPT, TSIG, ...).
func isMeta(t uint16) bool {
	switch t {
	case dns.TypeOPT, dns.TypeTSIG, dns.TypeTKEY, dns.TypeIXFR, dns.TypeAXFR, dns.TypeMAILA, dns.TypeMAILB, dns.TypeANY:
		return true
	}
	return t >= 128 && t <= 255
}

// Value returns rr's RDATA in a DNSEndpoint target's format (dnsv1.Endpoint.Targets): a TXT's
// value as every provider reads and writes it (txtValue), host names without the trailing dot,
// and miekg/dns's presentation format otherwise; false for types a DNSEndpoint cannot hold and
// for a TXT whose character-strings a target cannot carry.
func Value(rr dns.RR) (string, bool) {
	switch r := rr.(type) {
	case *dns.A:
		return r.A.String(), r.A != nil
	case *dns.AAAA:
		return r.AAAA.String(), r.AAAA != nil
	case *dns.TXT:
		return txtValue(r.Txt)
	case *dns.CNAME:
		return dnswire.Dotless(r.Target), true
	case *dns.PTR:
		return dnswire.Dotless(r.Ptr), true
	case *dns.NS:
		return dnswire.Dotless(r.Ns), true
	case *dns.MX:
		return strings.Join([]string{itoa(uint64(r.Preference)), dnswire.Dotless(r.Mx)}, " "), true
	case *dns.SRV:
		return strings.Join([]string{itoa(uint64(r.Priority)), itoa(uint64(r.Weight)), itoa(uint64(r.Port)), dnswire.Dotless(r.Target)}, " "), true
	case *dns.CAA:
		return strings.TrimPrefix(r.String(), r.Hdr.String()), true
	}
	return "", false
}

// txtValue returns the value of a TXT of character-strings txt (miekg/dns's escaped
// presentation form) as a DNSEndpoint target holds it: the raw bytes, unescaped, of its
// character-strings joined (provider.TXTValue). A provider writes a target as 255-byte
// character-strings (provider.SplitTXT), so the value is served as sent exactly when txt is
// that split of it; false otherwise, so that no TXT is served with other strings than sent.
func txtValue(txt []string) (string, bool) {
	raw := make([]string, len(txt))
	for i, s := range txt {
		raw[i] = provider.TXTValue([]string{s})
	}
	v := provider.JoinTXT(raw)
	return v, slices.Equal(provider.SplitTXT(v), raw)
}

func itoa(n uint64) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// RRset is one record set written through dynamic updates.
type RRset struct {
	// TTL in seconds (the last added record's, RFC 2136 §3.4.2.2).
	TTL uint32
	// Values in a DNSEndpoint target's format, sorted, without duplicates.
	Values []string
}

// Records are the record sets written through dynamic updates: owner name (a lower-case FQDN)
// → type → RRset. A name without record sets is absent.
type Records map[string]map[uint16]RRset

// Clone returns a deep copy of r.
func (r Records) Clone() Records {
	out := make(Records, len(r))
	for name, sets := range r {
		m := make(map[uint16]RRset, len(sets))
		for t, s := range sets {
			m[t] = RRset{TTL: s.TTL, Values: slices.Clone(s.Values)}
		}
		out[name] = m
	}
	return out
}

// Apply applies changes, in order, to a copy of r and returns it (RFC 2136 §3.4.2): an add
// joins its RRset (a duplicate value is ignored, the TTL becomes the added record's); a
// deletion of a record, an RRset or a name removes what is there and ignores what is not.
// A TXT value's duplicate check compares its raw bytes (Value).
func Apply(r Records, changes []Change) Records {
	out := r.Clone()
	for _, c := range changes {
		sets := out[c.Name]
		switch c.Op {
		case OpAdd:
			if sets == nil {
				sets = map[uint16]RRset{}
				out[c.Name] = sets
			}
			s := sets[c.Type]
			if !slices.Contains(s.Values, c.Value) {
				s.Values = append(s.Values, c.Value)
				slices.Sort(s.Values)
			}
			s.TTL = c.TTL
			sets[c.Type] = s
		case OpDeleteRR:
			s, ok := sets[c.Type]
			if !ok {
				continue
			}
			s.Values = slices.DeleteFunc(s.Values, func(v string) bool { return v == c.Value })
			if len(s.Values) == 0 {
				delete(sets, c.Type)
			} else {
				sets[c.Type] = s
			}
		case OpDeleteRRset:
			delete(sets, c.Type)
		case OpDeleteName:
			delete(out, c.Name)
		}
		if len(out[c.Name]) == 0 {
			delete(out, c.Name)
		}
	}
	return out
}
