package gslb

import (
	"net"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/miekg/dns"
)

// EdgeServer is one cluster's name server in an edge zone's referral for a Gslb zone.
type EdgeServer struct {
	// GeoTag is the cluster's geo tag, lower case: the <geotag> of ns-<geotag>.<zone>.
	GeoTag string
	// Name is the name server's FQDN, lower case, with its trailing dot.
	Name string
	// Addr is its glue address (A preferred over AAAA), "" when the referral carries none.
	Addr string
}

// ParseReferral returns the clusters' name servers in resp, the answer to an NS query for zone
// asked of the edge zone's server: NS records owned by zone (in the answer or authority
// section) whose target is ns-<geotag>.<zone> (the name every cluster publishes, see
// controllers/gslb writeEdge), the one of geoTag (this cluster) left out, in the order of resp,
// with their glue from the additional section (an A record wins over an AAAA). Names compare
// case-insensitively (RFC 4343). Other NS records are ignored.
func ParseReferral(resp *dns.Msg, zone, geoTag string) []EdgeServer {
	fqZone := dnswire.Fqdn(zone)
	glue := map[string]string{}
	for _, rr := range resp.Extra {
		if a, ok := rr.(*dns.A); ok {
			glue[strings.ToLower(a.Hdr.Name)] = a.A.String()
		} else if a, ok := rr.(*dns.AAAA); ok && glue[strings.ToLower(a.Hdr.Name)] == "" {
			glue[strings.ToLower(a.Hdr.Name)] = a.AAAA.String()
		}
	}
	var out []EdgeServer
	for _, rr := range append(slices.Clone(resp.Answer), resp.Ns...) {
		ns, ok := rr.(*dns.NS)
		if !ok || strings.ToLower(ns.Hdr.Name) != fqZone {
			continue
		}
		name := strings.ToLower(ns.Ns)
		label, rest, _ := strings.Cut(name, ".")
		geo, isCluster := strings.CutPrefix(label, "ns-")
		if !isCluster || rest != fqZone || geo == strings.ToLower(geoTag) {
			continue
		}
		out = append(out, EdgeServer{GeoTag: geo, Name: name, Addr: glue[name]})
	}
	return out
}

// FirstA returns the address of the first A record in resp's answer section that holds an
// IPv4 address, "" when none. An A record with empty RDATA, which miekg/dns unpacks with a nil
// address, is skipped (FuzzPeerAnswer found it printed as "<nil>", then used as a peer address).
func FirstA(resp *dns.Msg) string {
	for _, rr := range resp.Answer {
		if x, ok := rr.(*dns.A); ok {
			if a, ok := netip.AddrFromSlice(x.A); ok && a.Unmap().Is4() {
				return a.Unmap().String()
			}
		}
	}
	return ""
}

// EdgePeers returns the servers with an address as peers at that address and port, sorted by
// geo tag, one per geo tag (the first in servers' order wins).
func EdgePeers(servers []EdgeServer, port int) []Peer {
	var peers []Peer
	for _, s := range servers {
		if s.Addr == "" {
			continue
		}
		peers = append(peers, Peer{GeoTag: s.GeoTag, Addr: net.JoinHostPort(s.Addr, strconv.Itoa(port))})
	}
	sort.SliceStable(peers, func(i, j int) bool { return peers[i].GeoTag < peers[j].GeoTag })
	return slices.CompactFunc(peers, func(a, b Peer) bool { return a.GeoTag == b.GeoTag })
}
