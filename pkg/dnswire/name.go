package dnswire

import (
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// Canonical returns name lower-case with the trailing dot (an FQDN), the form the zone store
// keys owners and origins by. It does not check that name is a domain name.
func Canonical(name string) string { return dns.Fqdn(strings.ToLower(name)) }

// Parent returns the FQDN one label up from name (an FQDN), "" at the root.
func Parent(name string) string {
	off, end := dns.NextLabel(name, 0)
	if end {
		return ""
	}
	return name[off:]
}

// CanonicalKey returns name's labels from the right joined by a byte below every label byte, so
// that comparing the keys of lower-case names orders the names as RFC 4034 §6.1 canonical order
// does (label by label from the right, a parent before its children).
func CanonicalKey(name string) string {
	labels := dns.SplitDomainName(name)
	slices.Reverse(labels)
	return strings.Join(labels, "\x00")
}
