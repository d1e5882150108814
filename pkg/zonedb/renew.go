package zonedb

import (
	"fmt"
	"time"
)

// Renew serves the zone origin (any case) again, its data unchanged, at a newer SOA serial when
// its served version is older than since, the start of the zone's current signing period: when
// the store published it before since, or its serial is older than since in Unix seconds. The
// new serial is since in Unix seconds when that is newer than the served one (every replica and
// every restart then computes the same serial for the same data and period), else the served
// serial + 1 (RFC 1982). The renewal goes through the single publish point, so it is journaled
// (as a change without records) and the OnChange hooks (NOTIFY) are told; it is not persisted:
// the next change moves on from its serial (Update), and a replica that reads the persisted
// version computes the same renewal. It returns the serial served and whether it renewed.
//
// A signed zone's signatures are made per signing period (docs/dnssec.md, "Zone transfers"):
// renewing it at each period's start gives a secondary a newer serial to transfer, carrying
// that period's signatures, before the ones it holds expire.
func (s *Store) Renew(origin string, since time.Time) (uint32, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, err := s.zone(origin)
	if err != nil {
		return 0, false, err
	}
	serial := unixSerial(since)
	switch {
	case SerialNewer(serial, z.soa.Serial):
	case z.published.Before(since):
		serial = z.soa.Serial + 1
	default:
		return z.soa.Serial, false, nil
	}
	nz, err := z.renewed(serial)
	if err != nil {
		return 0, false, fmt.Errorf("renew zone %s: %w", z.origin, err)
	}
	nz.published = since // renewed for this period: once, whatever the store's clock says
	s.publish(z.origin, nz)
	return serial, true, nil
}
