package provider

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/geo"
)

// MaxTTL is the largest TTL, in seconds: RFC 2181 §8 limits TTLs to
// 2^31 - 1.
const MaxTTL = math.MaxInt32

// txtChunk is the longest character-string: one length octet, so at most 255
// bytes (RFC 1035 §3.3).
const txtChunk = 255

// SplitTXT splits a logical TXT value into the character-strings written on
// the wire, each at most 255 bytes (RFC 1035 §3.3, §3.3.14). The empty value
// is one empty character-string. Splitting is by bytes; JoinTXT restores the
// value exactly.
func SplitTXT(value string) []string {
	if len(value) <= txtChunk {
		return []string{value}
	}
	out := make([]string, 0, (len(value)+txtChunk-1)/txtChunk)
	for len(value) > txtChunk {
		out = append(out, value[:txtChunk])
		value = value[txtChunk:]
	}
	return append(out, value)
}

// JoinTXT returns the logical TXT value of a record: the concatenation of
// its character-strings (the convention of SPF, RFC 7208 §3.3, and of
// DKIM).
func JoinTXT(chunks []string) string { return strings.Join(chunks, "") }

// NewTXT builds a miekg TXT (or SPF, for rtype "SPF") record holding the
// logical value, split with SplitTXT. miekg/dns keeps character-strings in
// escaped presentation form, so each chunk is escaped here.
func NewTXT(hdr dns.RR_Header, value string) dns.RR {
	chunks := SplitTXT(value)
	for i, c := range chunks {
		chunks[i] = EscapeTXT(c)
	}
	if hdr.Rrtype == dns.TypeSPF {
		return &dns.SPF{Hdr: hdr, Txt: chunks}
	}
	hdr.Rrtype = dns.TypeTXT
	return &dns.TXT{Hdr: hdr, Txt: chunks}
}

// TXTValue returns the logical value of miekg character-strings (escaped
// presentation form, as miekg/dns stores them).
func TXTValue(txt []string) string {
	var b strings.Builder
	for _, s := range txt {
		b.WriteString(unescapeTXT(s))
	}
	return b.String()
}

// EscapeTXT turns raw bytes into the escaped form of RFC 1035 §5.1, as miekg/dns and Cloud DNS
// use it: '"' and '\' get a backslash, bytes outside printable ASCII become \DDD (decimal).
func EscapeTXT(raw string) string { return EscapeTXTBase(raw, 10) }

// EscapeTXTBase is EscapeTXT with the radix of the \NNN escapes: 10 as RFC 1035 §5.1 writes
// them, 8 as Route 53 does (the base ParseQuotedTXT takes back).
func EscapeTXTBase(raw string, base int) string {
	verb := "\\%03d"
	if base == 8 {
		verb = "\\%03o"
	}
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < ' ' || c > '~':
			fmt.Fprintf(&b, verb, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// unescapeTXT reverses EscapeTXT (\DDD and \X, RFC 1035 §5.1).
func unescapeTXT(s string) string {
	if !strings.ContainsRune(s, '\\') {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		if i+3 < len(s) && isDigit(s[i+1]) && isDigit(s[i+2]) && isDigit(s[i+3]) {
			v, _ := strconv.Atoi(s[i+1 : i+4])
			if v <= 255 {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i+1])
		i++
	}
	return b.String()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// ParseQuotedTXT returns the logical value of a TXT record in presentation form: its quoted
// character-strings (unquoted words count as character-strings too) joined, with \X and \NNN
// escapes undone. base is the radix of NNN: 10 in RFC 1035 §5.1 (miekg/dns, Cloud DNS), 8 in
// Route 53's values (Route 53 Developer Guide, "TXT record type"). Malformed escapes are kept as
// the escaped byte; it never fails.
func ParseQuotedTXT(v string, base int) string {
	digit := func(c byte) bool { return c >= '0' && int(c-'0') < base && c <= '9' }
	var b strings.Builder
	in := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			in = !in
		case c == '\\' && i+3 < len(v) && digit(v[i+1]) && digit(v[i+2]) && digit(v[i+3]):
			n, _ := strconv.ParseUint(v[i+1:i+4], base, 8)
			b.WriteByte(byte(n))
			i += 3
		case c == '\\' && i+1 < len(v):
			b.WriteByte(v[i+1])
			i++
		case !in && c == ' ':
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ToRRs converts a record set into miekg records, one per target, with the
// owner name as FQDN, class IN and the set's TTL. Targets are read in
// presentation form with dns.NewRR; names in them are absolute whether or not
// they end in a dot. TXT/SPF targets are logical values (see NewTXT). Every
// record must also pass checkRdata and dnswire.CheckWire (pack and unpack), so that no
// provider is sent, and no store keeps, a record that cannot go on the wire.
// Errors wrap ErrInvalidChange and name the set and the target.
func ToRRs(rs RecordSet) ([]dns.RR, error) {
	t, ok := dns.StringToType[strings.ToUpper(rs.Type)]
	if !ok || t == dns.TypeNone {
		return nil, fmt.Errorf("%w: %s: unknown record type %q", ErrInvalidChange, rs.Name, rs.Type)
	}
	if rs.TTL < 0 || rs.TTL > MaxTTL {
		return nil, fmt.Errorf("%w: %s: TTL %d outside 0..%d (RFC 2181 §8)", ErrInvalidChange, rs.Key(), rs.TTL, MaxTTL)
	}
	hdr := dns.RR_Header{Name: dnswire.Fqdn(rs.Name), Rrtype: t, Class: dns.ClassINET, Ttl: uint32(rs.TTL)}
	out := make([]dns.RR, 0, len(rs.Targets))
	for _, target := range rs.Targets {
		rr, err := targetRR(hdr, target)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: target %q: %v", ErrInvalidChange, rs.Key(), target, err)
		}
		out = append(out, rr)
	}
	return out, nil
}

// targetRR reads one target of a set with header hdr and checks that it is valid rdata of
// hdr.Rrtype that goes on the wire (checkRdata, dnswire.CheckWire).
func targetRR(hdr dns.RR_Header, target string) (dns.RR, error) {
	var rr dns.RR
	if hdr.Rrtype == dns.TypeTXT || hdr.Rrtype == dns.TypeSPF {
		rr = NewTXT(hdr, target)
	} else {
		var err error
		rr, err = dns.NewRR(fmt.Sprintf("%s %d IN %s %s", hdr.Name, hdr.Ttl, dns.TypeToString[hdr.Rrtype], target))
		if err != nil {
			return nil, err
		}
		if rr == nil || rr.Header().Rrtype != hdr.Rrtype {
			return nil, fmt.Errorf("not %s rdata", dns.TypeToString[hdr.Rrtype])
		}
	}
	if err := checkRdata(rr); err != nil {
		return nil, err
	}
	if err := dnswire.CheckWire(rr); err != nil {
		return nil, err
	}
	return rr, nil
}

// dsDigestLen returns the digest length, in bytes, of a DS digest type with a fixed length:
// SHA-1 (RFC 4034 §5.1.4), SHA-256 (RFC 4509 §2.2), GOST R 34.11-94 (RFC 5933 §4) and SHA-384
// (RFC 6605 §2); false for other types.
func dsDigestLen(digestType uint8) (int, bool) {
	switch digestType {
	case dns.SHA1:
		return 20, true
	case dns.SHA256, dns.GOST94:
		return 32, true
	case dns.SHA384:
		return 48, true
	}
	return 0, false
}

// checkRdata applies the rules of a type's rdata that miekg/dns's parser leaves out: a DS has a
// digest (RFC 4034 §5.1.4), of its digest type's length where that is fixed (dsDigestLen).
func checkRdata(rr dns.RR) error {
	ds, ok := rr.(*dns.DS)
	if !ok {
		return nil
	}
	if ds.Digest == "" {
		return errors.New("a DS needs a digest (RFC 4034 §5.1.4)")
	}
	if want, fixed := dsDigestLen(ds.DigestType); fixed && len(ds.Digest) != 2*want {
		return fmt.Errorf("digest type %d takes %d hex digits, not %d", ds.DigestType, 2*want, len(ds.Digest))
	}
	return nil
}

// TargetFromRR returns the canonical target of one record: the rdata in
// presentation form, with names lower-case and without trailing dot (the
// root stays "."), and TXT/SPF as the logical value.
func TargetFromRR(rr dns.RR) string {
	switch v := rr.(type) {
	case *dns.A:
		return v.A.String()
	case *dns.AAAA:
		return v.AAAA.String()
	case *dns.CNAME:
		return targetName(v.Target)
	case *dns.NS:
		return targetName(v.Ns)
	case *dns.PTR:
		return targetName(v.Ptr)
	case *dns.DNAME:
		return targetName(v.Target)
	case *dns.MX:
		return strconv.Itoa(int(v.Preference)) + " " + targetName(v.Mx)
	case *dns.SRV:
		return fmt.Sprintf("%d %d %d %s", v.Priority, v.Weight, v.Port, targetName(v.Target))
	case *dns.SOA:
		return fmt.Sprintf("%s %s %d %d %d %d %d", targetName(v.Ns), targetName(v.Mbox), v.Serial, v.Refresh, v.Retry, v.Expire, v.Minttl)
	case *dns.TXT:
		return TXTValue(v.Txt)
	case *dns.SPF:
		return TXTValue(v.Txt)
	}
	return strings.TrimPrefix(rr.String(), rr.Header().String())
}

// CanonicalTarget returns target in canonical presentation form for rtype
// ("192.0.2.1", "a.example.test", "10 mail.example.test",
// "0 5 5060 sip.example.test", `0 issue "letsencrypt.org"`; TXT unchanged). Every target is
// parsed with miekg/dns and must pack (ToRRs). Errors wrap ErrInvalidChange.
func CanonicalTarget(rtype, target string) (string, error) {
	rtype = strings.ToUpper(rtype)
	rrs, err := ToRRs(RecordSet{Name: "target.invalid", Type: rtype, TTL: 0, Targets: []string{target}})
	if err != nil {
		return "", err
	}
	if rtype == "TXT" || rtype == "SPF" {
		return target, nil
	}
	return TargetFromRR(rrs[0]), nil
}

// CanonicalRecordSet validates rs and returns it in canonical form: name
// (ValidateName), upper-case type, canonical targets, TTL within RFC 2181 §8,
// no duplicate targets (RFC 2181 §5), a non-negative Weight only together
// with a SetIdentifier, and empty ProviderSpecific as nil. Errors wrap
// ErrInvalidChange.
func CanonicalRecordSet(rs RecordSet) (RecordSet, error) {
	out := rs.Clone()
	name, err := ValidateName(rs.Name)
	if err != nil {
		return RecordSet{}, err
	}
	out.Name = name
	out.Type = strings.ToUpper(strings.TrimSpace(rs.Type))
	if _, ok := dns.StringToType[out.Type]; !ok {
		return RecordSet{}, fmt.Errorf("%w: %s: unknown record type %q", ErrInvalidChange, name, rs.Type)
	}
	if rs.TTL < 0 || rs.TTL > MaxTTL {
		return RecordSet{}, fmt.Errorf("%w: %s: TTL %d outside 0..%d (RFC 2181 §8)", ErrInvalidChange, out.Key(), rs.TTL, MaxTTL)
	}
	if rs.Weight != nil && (*rs.Weight < 0 || rs.SetIdentifier == "") {
		return RecordSet{}, fmt.Errorf("%w: %s: a weight must be >= 0 and needs a set identifier", ErrInvalidChange, out.Key())
	}
	seen := make(map[string]struct{}, len(rs.Targets))
	for i, t := range rs.Targets {
		ct, err := CanonicalTarget(out.Type, t)
		if err != nil {
			return RecordSet{}, fmt.Errorf("%s: %w", out.Key(), err)
		}
		if _, dup := seen[ct]; dup {
			return RecordSet{}, fmt.Errorf("%w: %s: duplicate target %q (RFC 2181 §5)", ErrInvalidChange, out.Key(), ct)
		}
		seen[ct] = struct{}{}
		out.Targets[i] = ct
	}
	if len(out.ProviderSpecific) == 0 {
		out.ProviderSpecific = nil
	}
	return out, nil
}

// isGeo: rs carries pkg/geo's geo tag label.
func isGeo(rs RecordSet) bool {
	_, ok := rs.ProviderSpecific[geo.LabelTag]
	return ok
}

// GroupRRs groups records into plain record sets by (owner, type), in order
// of first appearance, targets in record order. A set's TTL is the smallest
// TTL of its records (RFC 2181 §5.2 requires them equal).
func GroupRRs(rrs []dns.RR) []RecordSet {
	type key struct {
		name string
		t    uint16
	}
	idx := map[key]int{}
	var out []RecordSet
	for _, rr := range rrs {
		h := rr.Header()
		k := key{dnswire.Dotless(h.Name), h.Rrtype}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, RecordSet{Name: k.name, Type: dns.TypeToString[h.Rrtype], TTL: int64(h.Ttl)})
		}
		out[i].Targets = append(out[i].Targets, TargetFromRR(rr))
		out[i].TTL = min(out[i].TTL, int64(h.Ttl))
	}
	return out
}

// PresentationValue spells a canonical target as zone-file style APIs (Route 53, Cloud DNS) take
// it (RFC 1035 §5.1): TXT and SPF as quoted character-strings of at most 255 bytes, each escaped
// by escapeTXT (the APIs differ: Route 53 wants octal \ooo, Cloud DNS decimal \DDD); CNAME, NS,
// PTR and DNAME targets, and the host of MX and SRV, absolute with a trailing dot. Other types
// are returned unchanged.
func PresentationValue(rtype, target string, escapeTXT func(string) string) string {
	switch rtype {
	case "TXT", "SPF":
		chunks := SplitTXT(target)
		for i, c := range chunks {
			chunks[i] = `"` + escapeTXT(c) + `"`
		}
		return strings.Join(chunks, " ")
	case "CNAME", "NS", "PTR", "DNAME":
		return dnswire.Fqdn(target)
	case "MX", "SRV":
		f := strings.Fields(target)
		if len(f) > 0 {
			f[len(f)-1] = dnswire.Fqdn(f[len(f)-1])
		}
		return strings.Join(f, " ")
	}
	return target
}

// TargetOfValue reads back a value as PresentationValue spells it: TXT and SPF as quoted
// character-strings whose \NNN escapes are in base (ParseQuotedTXT), other types canonical
// (CanonicalTarget), or unchanged when they do not parse.
func TargetOfValue(rtype, v string, base int) string {
	if rtype == "TXT" || rtype == "SPF" {
		return ParseQuotedTXT(v, base)
	}
	if c, err := CanonicalTarget(rtype, v); err == nil {
		return c
	}
	return v
}

// CheckInZone checks a canonical set c of a provider whose server keeps the SOA itself: c is
// inside zone and is not the SOA, which owner (the server's name in the error: "the server",
// "PowerDNS") manages. The error wraps ErrInvalidChange.
func CheckInZone(zone string, c RecordSet, owner string) error {
	switch {
	case !dnswire.IsSubdomain(c.Name, zone):
		return fmt.Errorf("%w: %s is not in zone %s", ErrInvalidChange, c.Name, zone)
	case c.Type == "SOA":
		return fmt.Errorf("%w: %s: the SOA is managed by %s", ErrInvalidChange, c.Key(), owner)
	}
	return nil
}

// ValidateChangeSet is the check every provider makes of one side of a Change before writing
// anything: which ("Before" or "After") must be present, canonical (CanonicalRecordSet), inside
// zone and non-empty, and weighted only where caps.WeightedRouting. A geo set (pkg/geo's
// LabelTag in ProviderSpecific) carries its geo tag as set identifier, without a weight, where
// caps.GeoRouting, whether or not the provider routes by weight. It returns the canonical set,
// or an error wrapping ErrInvalidChange or ErrNotCapable. Providers add their own limits after it.
func ValidateChangeSet(action Action, which string, rs *RecordSet, zone string, caps Capabilities) (RecordSet, error) {
	if rs == nil {
		return RecordSet{}, fmt.Errorf("%w: %s change without %s", ErrInvalidChange, action, which)
	}
	c, err := CanonicalRecordSet(*rs)
	if err != nil {
		return RecordSet{}, err
	}
	switch {
	case !dnswire.IsSubdomain(c.Name, zone):
		return c, fmt.Errorf("%w: %s is not in zone %s", ErrInvalidChange, c.Key(), zone)
	case len(c.Targets) == 0:
		return c, fmt.Errorf("%w: %s has no targets", ErrInvalidChange, c.Key())
	case !caps.WeightedRouting && c.Weight == nil && caps.GeoRouting && isGeo(c):
	case !caps.WeightedRouting && (c.Weight != nil || c.SetIdentifier != ""):
		return c, fmt.Errorf("%w: %s: weighted routing", ErrNotCapable, c.Key())
	}
	return c, nil
}
