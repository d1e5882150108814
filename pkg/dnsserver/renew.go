package dnsserver

import (
	"context"
	"errors"
	"time"

	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// renewTick is how often the server looks for signed zones whose signing period started.
const renewTick = time.Second

// renewSigned renews every signed zone (zonedb.Store.Renew) within renewTick of the start of
// its signing period (dnssec.Policy.Window), until ctx ends: the zone's serial moves forward,
// a transfer at the new serial carries the new period's signatures, and the secondaries are
// sent NOTIFY, so that a secondary transferring on time never holds signatures past their
// expiration (docs/dnssec.md, "Zone transfers"). Each look costs a map lookup per signed zone;
// a renewal happens once per zone and period.
func (s *Server) renewSigned(ctx context.Context) {
	t := time.NewTicker(renewTick)
	defer t.Stop()
	for {
		s.renewPeriods(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// renewPeriods renews each signed zone whose version is older than its signing period at now.
func (s *Server) renewPeriods(now time.Time) {
	sg := s.signing.Load()
	if sg == nil {
		return
	}
	for origin, pol := range sg.zones {
		inception, _, _ := pol.Window(now)
		serial, renewed, err := s.store.Renew(origin, inception.Add(dnssec.Skew))
		switch {
		case errors.Is(err, zonedb.ErrZoneNotFound):
		case err != nil:
			s.opts.Logger.Error(err, "renewing a signed zone's serial for its signing period failed", "zone", origin)
		case renewed:
			s.opts.Logger.V(1).Info("signed zone renewed for its signing period", "zone", origin, "serial", serial)
		}
	}
}
