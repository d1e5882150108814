package registry

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"strings"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// RecordTTL is the TTL of registry TXT records, in seconds. Registry records
// are read from the provider's zone listing, not through resolvers, so the
// TTL only bounds how long a dig of them may be stale.
const RecordTTL = 300

// Registry name syntax. The first label of a registry name is
//
//	dp-<type>-<hash>-<suffix>
//
// where <type> is the managed type in lower case, <hash> is hashLen
// characters of lower-case base32 (RFC 4648 §6 alphabet) of
// sha256(ownerID, resource, setIdentifier), and <suffix> is one of
//   - the managed name's first label, when it does not start with '-' and
//     fits (real host labels never start with '-', RFC 952/RFC 1123 §2.1);
//   - "-w" for a wildcard first label "*" (RFC 4592);
//   - "-apex" for a record at the zone apex;
//   - "-h" + nameHashLen base32 characters of sha256(first label), for a
//     first label that starts with '-' or would make the label longer than
//     63 octets (RFC 1035 §2.3.4);
//   - "-g" + nameHashLen base32 characters of sha256(managed name), for a
//     name hoisted out from below a zone cut or too long to prefix.
//
// The markers all start with '-', so they never equal a real first label.
const (
	labelPrefix = provider.RegistryLabelPrefix
	hashLen     = provider.RegistryHashLen
	nameHashLen = 16
	maxLabelLen = 63
	maxNameLen  = 253

	markerWildcard = "-w"
	markerApex     = "-apex"
	markerLabel    = "-h"
	markerHoisted  = "-g"
)

// Name returns the name of the registry TXT record that holds contributor
// c's entry for the managed record set key in zone. It is deterministic in
// (zone, c, key, cuts), distinct for distinct contributors, types, set
// identifiers and names (up to a hash collision), and never a managed name:
//
//   - a name strictly below the apex gets a SIBLING: its first label is
//     prefixed, "www.example.test" -> "dp-a-<hash>-www.example.test",
//     "*.example.test" -> "dp-a-<hash>--w.example.test". A sibling is beside
//     a delegation (NS) at the managed name, never below it, so the cut does
//     not hide it (dnsplane API contract, "Naming"), and it is a different
//     name from a CNAME at the managed name (RFC 1034 §3.6.2);
//   - the zone apex (whose sibling would be outside the zone) gets a child
//     of the apex: "example.test" -> "dp-a-<hash>--apex.example.test";
//   - a name strictly below one of cuts (delegation points of the zone, the
//     names of its non-apex NS sets, such as glue "ns1.child.example.test"
//     below "child.example.test") is hoisted beside the highest such cut:
//     "dp-a-<hash>--g<namehash>.example.test", so that it is never at or
//     below a cut;
//   - a sibling longer than 253 characters (RFC 1035 §2.3.4) is hoisted to
//     a child of the apex the same way.
//
// zone, key.Name and cuts are in the dotless form (dnswire.Dotless); key.Name
// must be zone or below it. Cuts that are not strictly below zone are
// ignored. See the constants above for the label syntax.
func Name(zone string, c Contributor, key provider.RecordSetKey, cuts ...string) string {
	return nameWithHash(zone, contributorHash(c, key.SetIdentifier), key, cuts...)
}

// nameWithHash is Name with the contributor's hash (contributorHash) already computed.
func nameWithHash(zone, hash string, key provider.RecordSetKey, cuts ...string) string {
	zone = dnswire.Dotless(zone)
	name := dnswire.Dotless(key.Name)
	prefix := labelPrefix + strings.ToLower(key.Type) + "-" + hash + "-"
	if name == zone {
		return join(prefix+markerApex, zone)
	}
	top := ""
	for _, cut := range cuts {
		cut = dnswire.Dotless(cut)
		if dnswire.IsStrictSubdomain(cut, zone) && dnswire.IsStrictSubdomain(name, cut) &&
			(top == "" || len(cut) < len(top)) {
			top = cut
		}
	}
	if top != "" {
		return join(prefix+markerHoisted+hash32(name, nameHashLen), dnswire.Parent(top))
	}
	if suffix, parent, ok := plainForm(zone, name, len(prefix)); ok {
		return join(prefix+suffix, parent)
	}
	return join(prefix+markerHoisted+hash32(name, nameHashLen), zone)
}

// plainForm is the label suffix and the parent of Name's plain form (no cut above name) for
// name in zone, both canonical, after a label prefix of prefixLen bytes ("_dnsplane-<type>-
// <hash>-"); ok is false when that name would be longer than maxNameLen, and Name hoists it
// to the zone instead. It builds no string unless the first label needs hashing.
func plainForm(zone, name string, prefixLen int) (suffix, parent string, ok bool) {
	if name == zone {
		return markerApex, zone, true
	}
	first, rest, _ := strings.Cut(name, ".")
	suffix = first
	switch {
	case first == "*":
		suffix = markerWildcard
	case strings.HasPrefix(first, "-") || prefixLen+len(first) > maxLabelLen:
		suffix = markerLabel + hash32(first, nameHashLen)
	}
	n := prefixLen + len(suffix)
	if rest != "" {
		n += 1 + len(rest)
	}
	return suffix, rest, n <= maxNameLen
}

// RecordSet returns the registry TXT record set that holds e in zone: at
// Name(zone, e.Contributor(), e.Key(), cuts...), TTL RecordTTL, with the
// single value e.Encode().
func RecordSet(zone string, e Entry, cuts ...string) provider.RecordSet {
	return provider.RecordSet{
		Name:    Name(zone, e.Contributor(), e.Key(), cuts...),
		Type:    "TXT",
		TTL:     RecordTTL,
		Targets: []string{e.Encode()},
	}
}

// IsRegistryName reports whether name's first label has the syntax of a
// dnsplane registry name ("dp-<type>-<hash>-<suffix>", see Name). It looks
// at the syntax only: the zone's records are not consulted. The syntax is
// provider.IsRegistryName's, so that providers recognise registry records
// without importing this package.
func IsRegistryName(name string) bool { return provider.IsRegistryName(name) }

// parseLabel splits a registry first label into its type (lower-case),
// contributor hash and suffix (provider.ParseRegistryLabel).
func parseLabel(label string) (typ, hash, suffix string, ok bool) {
	return provider.ParseRegistryLabel(label)
}

// nameMatches reports whether regName is a name Name can give for e in
// zone: the same type and contributor hash, and either the plain form or a
// hoisted form whose parent is within zone and above e.Name.
func nameMatches(zone, regName string, e Entry) bool {
	label, parent, _ := strings.Cut(regName, ".")
	typ, h, suffix, ok := parseLabel(label)
	// typ is lower-case letters and digits, e.Type upper-case ones (Parse): EqualFold is
	// typ == strings.ToLower(e.Type), without building that string.
	if !ok || !strings.EqualFold(typ, e.Type) || h != contributorHash(e.Contributor(), e.SetIdentifier) {
		return false
	}
	// The plain form, compared piece by piece rather than built (label = prefix + typ + "-" +
	// h + "-" + suffix, as parseLabel splits it).
	prefixLen := len(labelPrefix) + len(typ) + 1 + len(h) + 1
	if s, p, ok := plainForm(zone, e.Name, prefixLen); ok && suffix == s && parent == p {
		return true
	}
	return suffix == markerHoisted+hash32(e.Name, nameHashLen) &&
		dnswire.IsSubdomain(parent, zone) && dnswire.IsStrictSubdomain(e.Name, parent)
}

// keyFromName recovers the managed name and type a registry name stands for,
// when its suffix is not a hash. ok is false for hashed suffixes and for
// names that are not registry names.
func keyFromName(regName string) (name, typ string, ok bool) {
	label, parent, _ := strings.Cut(regName, ".")
	t, _, suffix, ok := parseLabel(label)
	if !ok {
		return "", "", false
	}
	typ = strings.ToUpper(t)
	switch {
	case suffix == markerApex:
		return parent, typ, true
	case suffix == markerWildcard:
		return join("*", parent), typ, true
	case strings.HasPrefix(suffix, "-"):
		return "", "", false
	}
	return join(suffix, parent), typ, true
}

// contributorHash is the <hash> of a registry label: hashLen characters of
// base32(sha256(ownerID, resource, setIdentifier)), each part length-prefixed
// so that no two triples share an input.
func contributorHash(c Contributor, set string) string {
	h := sha256.New()
	for _, s := range []string{c.OwnerID, c.Resource, set} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return encode32(h.Sum(nil), hashLen)
}

// hash32 is n characters of lower-case base32 of sha256(s).
func hash32(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return encode32(sum[:], n)
}

func encode32(b []byte, n int) string {
	return strings.ToLower(base32.StdEncoding.EncodeToString(b)[:n]) // n <= 51: never padding
}

// join joins a label and a parent name ("" parent: the label alone).
func join(label, parent string) string {
	if parent == "" {
		return label
	}
	return label + "." + parent
}
