package provider

import (
	"fmt"
	"strings"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// Limits on names, RFC 1035 §2.3.4 (labels 63 octets, names 255 octets on
// the wire, i.e. 253 characters in dotted form without the trailing dot).
const (
	maxLabelLen = 63
	maxNameLen  = 253
)

// ValidateName checks a record or zone name and returns its canonical form.
// Accepted: host names made of letters, digits, '-' and '_' (RFC 1123 §2.1
// plus the underscore labels of RFC 8552 such as _acme-challenge), at most
// 63 characters per label and 253 in total (RFC 1035 §2.3.4), and a
// wildcard '*' only as the whole leftmost label (RFC 4592 §2.1.1). Escaped
// labels (RFC 1035 §5.1 "\.") are rejected. Errors wrap ErrInvalidChange.
func ValidateName(name string) (string, error) {
	n := dnswire.Dotless(name)
	if n == "" {
		return "", fmt.Errorf("%w: empty name %q", ErrInvalidChange, name)
	}
	if len(n) > maxNameLen {
		return "", fmt.Errorf("%w: name %q longer than %d characters", ErrInvalidChange, name, maxNameLen)
	}
	for i, label := range strings.Split(n, ".") {
		if label == "" {
			return "", fmt.Errorf("%w: name %q has an empty label", ErrInvalidChange, name)
		}
		if len(label) > maxLabelLen {
			return "", fmt.Errorf("%w: name %q has a label longer than %d characters", ErrInvalidChange, name, maxLabelLen)
		}
		if label == "*" {
			if i != 0 {
				return "", fmt.Errorf("%w: name %q: '*' is a wildcard only as the leftmost label", ErrInvalidChange, name)
			}
			continue
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return "", fmt.Errorf("%w: name %q has invalid character %q", ErrInvalidChange, name, r)
			}
		}
	}
	return n, nil
}

// targetName is the canonical spelling of a domain name inside rdata: the
// dotless form (dnswire.Dotless), except that the root stays "." so that
// "0 ." (null MX, RFC 7505) survives.
func targetName(n string) string {
	if d := dnswire.Dotless(n); d != "" {
		return d
	}
	return "."
}
