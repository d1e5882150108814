package gslb

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// Peer is one other cluster's DNS server: geo tag and host:port.
type Peer struct {
	// GeoTag is the peer cluster's geo tag, e.g. "us" (the key of strategy weights and of the
	// primary geo tag).
	GeoTag string
	// Addr is the peer's DNS server as host:port, e.g. "127.0.0.12:5353" or "[2001:db8::1]:53".
	Addr string
}

// ParsePeers parses the value of --ext-gslb-clusters: a comma-separated list of
// "geotag=host:port" entries, e.g. "us=127.0.0.12:5353, ap=127.0.0.13:5353". Spaces around
// entries, geo tags and addresses are trimmed; an empty (or all-space) string means no peers
// (nil, nil). Peers are returned in input order.
//
// Errors name the bad entry (1-based position and text): an empty entry (e.g. a trailing
// comma), a missing "=", an empty geo tag, one with spaces or upper case (CheckGeoTagCase), an address that is not host:port
// with a non-empty host and a port in 1-65535, or a geo tag given twice.
func ParsePeers(s string) ([]Peer, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var peers []Peer
	seen := map[string]int{}
	for i, entry := range strings.Split(s, ",") {
		pos := i + 1
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, fmt.Errorf("gslb peers: entry %d is empty", pos)
		}
		tag, addr, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("gslb peers: entry %d %q: want geotag=host:port", pos, entry)
		}
		tag, addr = strings.TrimSpace(tag), strings.TrimSpace(addr)
		if tag == "" || strings.ContainsAny(tag, " \t\r\n") {
			return nil, fmt.Errorf("gslb peers: entry %d %q: bad geo tag %q", pos, entry, tag)
		}
		if err := CheckGeoTagCase(tag); err != nil {
			return nil, fmt.Errorf("gslb peers: entry %d %q: %w", pos, entry, err)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("gslb peers: entry %d %q: address %q: %w", pos, entry, addr, err)
		}
		if strings.TrimSpace(host) == "" {
			return nil, fmt.Errorf("gslb peers: entry %d %q: address %q has no host", pos, entry, addr)
		}
		if strings.ContainsAny(host, " \t\r\n") {
			// "[ ]:53" splits into host " " (FuzzParsePeers): no host name or address has a space.
			return nil, fmt.Errorf("gslb peers: entry %d %q: address %q: host %q has a space", pos, entry, addr, host)
		}
		if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
			return nil, fmt.Errorf("gslb peers: entry %d %q: address %q: port %q is not in 1-65535", pos, entry, addr, port)
		}
		if prev, dup := seen[tag]; dup {
			return nil, fmt.Errorf("gslb peers: entry %d %q: geo tag %q already given in entry %d", pos, entry, tag, prev)
		}
		seen[tag] = pos
		peers = append(peers, Peer{GeoTag: tag, Addr: net.JoinHostPort(host, port)})
	}
	return peers, nil
}

// CheckGeoTagCase refuses a geo tag with an upper-case ASCII letter. Geo tags are lower case
// everywhere (--geo-tag, --ext-gslb-clusters, --ext-gslb-witnesses and the Gslb's
// primaryGeoTag, defaultGeoTag, weights and geoRegions values) and compare exactly: edge
// discovery reads a cluster's tag back from its name server's name (ns-<geotag>.<zone>), which
// DNS compares without case, so an upper-case tag would name one cluster two ways and the
// members would give different answers.
func CheckGeoTagCase(tag string) error {
	if strings.ToLower(tag) != tag {
		return fmt.Errorf("geo tag %q has upper case: geo tags are lower case (%q), since edge discovery reads them back from DNS names", tag, strings.ToLower(tag))
	}
	return nil
}

// LocalTargetsName returns the name under which a cluster publishes only its own healthy
// targets for host, and which peers query: "localtargets-" prefixed to host's first label,
// e.g. "localtargets-app.gslb.test" for "app.gslb.test". The result is canonical: lower-case,
// without a trailing dot.
func LocalTargetsName(host string) string {
	return "localtargets-" + dnswire.Dotless(host)
}
