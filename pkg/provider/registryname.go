package provider

import (
	"strings"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// Registry-name syntax. pkg/registry builds dnsplane's ownership records at names whose first
// label is
//
//	dp-<type>-<hash>-<suffix>
//
// (see registry.Name for the suffixes). The syntax lives here, below the registry, so that a
// provider can recognise those single-writer TXT records (for example to write them without a
// read-merge-write) without importing pkg/registry, which is a client of this package.
const (
	// RegistryLabelPrefix starts the first label of every registry name.
	RegistryLabelPrefix = "dp-"
	// RegistryHashLen is the length, in characters, of the <hash> part: lower-case base32
	// (RFC 4648 §6 alphabet).
	RegistryHashLen = 10
)

// IsRegistryName reports whether name's first label has the syntax of a dnsplane registry name
// (ParseRegistryLabel). It looks at the syntax only: no zone is consulted.
func IsRegistryName(name string) bool {
	label, _, _ := strings.Cut(dnswire.Dotless(name), ".")
	_, _, _, ok := ParseRegistryLabel(label)
	return ok
}

// ParseRegistryLabel splits a registry first label, "dp-<type>-<hash>-<suffix>", into its type
// (lower-case letters and digits), its RegistryHashLen-character contributor hash (lower-case
// base32) and its suffix (at least one character). ok is false for any other label.
func ParseRegistryLabel(label string) (typ, hash, suffix string, ok bool) {
	rest, found := strings.CutPrefix(label, RegistryLabelPrefix)
	if !found {
		return "", "", "", false
	}
	typ, rest, found = strings.Cut(rest, "-")
	if !found || typ == "" {
		return "", "", "", false
	}
	for i := 0; i < len(typ); i++ {
		if c := typ[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return "", "", "", false
		}
	}
	if len(rest) < RegistryHashLen+2 || rest[RegistryHashLen] != '-' {
		return "", "", "", false
	}
	hash, suffix = rest[:RegistryHashLen], rest[RegistryHashLen+1:]
	for i := 0; i < len(hash); i++ {
		if c := hash[i]; !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return "", "", "", false
		}
	}
	return typ, hash, suffix, true
}
