package registry

import (
	"strings"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// ExternalNaming is how an external-dns TXT registry names its records: external-dns'
// --txt-prefix, --txt-suffix and --txt-wildcard-replacement (sigs.k8s.io/external-dns
// registry/mapper.AffixNameMapper in v0.22). The zero value is external-dns' default: no affix,
// no wildcard replacement. Prefix and Suffix are mutually exclusive in external-dns; when both are
// set here, the names are built as external-dns builds them (prefix, then suffix).
type ExternalNaming struct {
	// Prefix is --txt-prefix; it may hold the template "%{record_type}" (replaced by the managed
	// type in lower case) and may end in "." to put the registry records one label below.
	Prefix string
	// Suffix is --txt-suffix; it may hold "%{record_type}" too.
	Suffix string
	// WildcardReplacement is --txt-wildcard-replacement: the first label written instead of a
	// leading "*" in a registry name.
	WildcardReplacement string
}

// externalTypeTemplate is external-dns' affix template for the record type.
const externalTypeTemplate = "%{record_type}"

// TXTName returns the name of the TXT record external-dns v0.22 writes for the record set
// (name, typ): name canonical, typ upper-case. Its first label becomes
// prefix + [<type>-] + first label + suffix, where "<type>-" (lower case) is added only when
// neither affix holds "%{record_type}", and a leading "*" is replaced by WildcardReplacement
// when that is set: with the zero naming "www.example.test" A is "a-www.example.test" and
// "*.example.test" CNAME is "cname-*.example.test"; with Prefix "%{record_type}." it is
// "a.www.example.test".
func (n ExternalNaming) TXTName(name, typ string) string {
	typ = strings.ToLower(typ)
	first, rest, _ := strings.Cut(name, ".")
	if n.WildcardReplacement != "" && first == "*" {
		first = strings.ToLower(n.WildcardReplacement)
	}
	prefix := strings.ReplaceAll(strings.ToLower(n.Prefix), externalTypeTemplate, typ)
	suffix := strings.ReplaceAll(strings.ToLower(n.Suffix), externalTypeTemplate, typ)
	if !n.typeInAffix() {
		first = typ + "-" + first
	}
	return join(prefix+first+suffix, rest)
}

// LegacyTXTName returns the name of the TXT record of external-dns' older format, which names no
// type and covers every type at name: the affixes with "%{record_type}" removed, around the first
// label (wildcard replaced as in TXTName). external-dns v0.22 still reads this format (for every
// type but AAAA) and no longer writes it; with the zero naming it is name itself.
func (n ExternalNaming) LegacyTXTName(name string) string {
	first, rest, _ := strings.Cut(name, ".")
	if n.WildcardReplacement != "" && first == "*" {
		first = strings.ToLower(n.WildcardReplacement)
	}
	prefix := strings.ReplaceAll(strings.ToLower(n.Prefix), externalTypeTemplate, "")
	suffix := strings.ReplaceAll(strings.ToLower(n.Suffix), externalTypeTemplate, "")
	return join(prefix+first+suffix, rest)
}

func (n ExternalNaming) typeInAffix() bool {
	return strings.Contains(n.Prefix, externalTypeTemplate) || strings.Contains(n.Suffix, externalTypeTemplate)
}

// ExternalRecord is one external-dns registry TXT record set of the zone and the claims it holds
// (one per value that is an external-dns registry value).
type ExternalRecord struct {
	// Set is the TXT record set as the provider listed it: the Before of its delete.
	Set provider.RecordSet
	// Claims are its external-dns registry values, in value order.
	Claims []ExternalClaim
	// Other counts its values that are not external-dns registry values (left alone).
	Other int
	// Legacy: Set is at the older, typeless name (ExternalNaming.LegacyTXTName).
	Legacy bool
}

// ParseExternalValue reads an external-dns registry value as external-dns v0.22 reads one
// (endpoint.NewLabelsFromStringPlain): surrounding double quotes dropped, comma-separated
// key=value tokens, one of which is "heritage=external-dns"; "external-dns/owner" and
// "external-dns/resource" give Owner and Resource. ok is false for any other value (another
// heritage, dnsplane's own values, SPF, encrypted values). A missing owner reads "(unknown)".
func ParseExternalValue(v string) (ExternalClaim, bool) {
	v = strings.Trim(strings.TrimSpace(v), `"`)
	var c ExternalClaim
	found := false
	for _, tok := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(tok, "=")
		if !ok {
			continue
		}
		switch k {
		case "heritage":
			if val != "external-dns" {
				return ExternalClaim{}, false
			}
			found = true
		case "external-dns/owner":
			c.Owner = val
		case "external-dns/resource":
			c.Resource = val
		}
	}
	if !found {
		return ExternalClaim{}, false
	}
	if c.Owner == "" {
		c.Owner = "(unknown)"
	}
	return c, true
}

// addExternalRecord keeps s, a non-registry TXT set, when one of its values is an external-dns
// registry value.
func (ix *Index) addExternalRecord(s provider.RecordSet) {
	r := ExternalRecord{Set: s}
	for _, t := range s.Targets {
		c, ok := ParseExternalValue(t)
		if !ok {
			r.Other++
			continue
		}
		c.RecordName = s.Name
		r.Claims = append(r.Claims, c)
	}
	if len(r.Claims) > 0 {
		ix.externalAt[s.Name] = append(ix.externalAt[s.Name], r)
	}
}

// ExternalFor returns the external-dns registry records that claim key under naming: the TXT set
// at naming.TXTName(key) and the one at naming.LegacyTXTName(key.Name) (Legacy set), each only
// when its set identifier is key's or empty. The legacy name is not looked at for AAAA (external-dns
// v0.22 reads no legacy record for AAAA), nor for a TXT key when it is key's own name (it is then
// the managed set itself). Sorted new format first; nil when none. The
// result is a copy.
func (ix *Index) ExternalFor(key provider.RecordSetKey, naming ExternalNaming) []ExternalRecord {
	if len(ix.externalAt) == 0 {
		return nil // most zones: no name to build for every key planned
	}
	var out []ExternalRecord
	add := func(name string, legacy bool) {
		for _, r := range ix.externalAt[name] {
			if r.Set.SetIdentifier != "" && r.Set.SetIdentifier != key.SetIdentifier {
				continue
			}
			c := r
			c.Set = r.Set.Clone()
			c.Claims = append([]ExternalClaim(nil), r.Claims...)
			c.Legacy = legacy
			out = append(out, c)
		}
	}
	typed := naming.TXTName(key.Name, key.Type)
	add(typed, false)
	if legacy := naming.LegacyTXTName(key.Name); key.Type != "AAAA" && legacy != typed && !(legacy == key.Name && key.Type == "TXT") {
		add(legacy, true)
	}
	return out
}
