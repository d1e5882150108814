package gslb

import "net/netip"

// UsableTarget reports whether a is an address a client can be sent to as a target: a valid
// unicast address with global or private scope (loopback included, for a single-host fleet).
// The unspecified address (0.0.0.0, ::), the limited broadcast 255.255.255.255, multicast
// addresses, link-local addresses (they need a zone, and no other host reaches them) and zoned
// addresses never are. A peer's localtargets answer drops them when read (Querier.Query), so
// they are never candidates, never probed and never in a verdict record.
func UsableTarget(a netip.Addr) bool {
	a = a.Unmap()
	switch {
	case !a.IsValid(), a.Zone() != "", a.IsUnspecified(), a.IsMulticast(),
		a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return false
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return false
	}
	return true
}
