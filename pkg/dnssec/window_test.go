package dnssec_test

import (
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/dnssec"
)

// TestPolicy_WindowLeavesRefresh: docs/api.md, "signatureRefreshSeconds: re-sign when less
// than this is left": every signature served has at least Refresh left, for a refresh above
// half the validity too (signatureValiditySeconds 3600 with signatureRefreshSeconds 3000, which
// an object admitted before admission refused it may hold).
func TestPolicy_WindowLeavesRefresh(t *testing.T) {
	start := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	for _, p := range []dnssec.Policy{
		{Validity: 3600 * time.Second, Refresh: 3000 * time.Second},
		{Validity: 3600 * time.Second, Refresh: 1800 * time.Second},
		{Validity: 3600 * time.Second, Refresh: 600 * time.Second},
		{Validity: 14 * 24 * time.Hour, Refresh: 7 * 24 * time.Hour},
		{Validity: 14 * 24 * time.Hour, Refresh: 10 * 24 * time.Hour},
	} {
		for d := time.Duration(0); d < 2*p.Validity; d += p.Validity / 97 {
			now := start.Add(d)
			_, exp, renew := p.Window(now)
			if left := exp.Sub(now); left < p.Refresh {
				t.Fatalf("validity %s: at %s a signature is served with %s left, less than signatureRefreshSeconds %s",
					p.Validity, now.Format(time.DateTime), left, p.Refresh)
			}
			if !renew.After(now) {
				t.Fatalf("validity %s, refresh %s: at %s the period ends at %s", p.Validity, p.Refresh, now, renew)
			}
		}
	}
}
