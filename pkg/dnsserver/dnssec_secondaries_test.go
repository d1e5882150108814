package dnsserver

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
	"github.com/dnsplane/dnsplane/internal/testing/metrictest"
	"github.com/dnsplane/dnsplane/internal/testing/secondarytest"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/xfr"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// TestDNSSEC_BINDAndNSDSecondariesServeTheSignedZoneAfterAChange: a real BIND and a real NSD,
// secondaries of the child server for the signed NSEC zone example.test. and the signed NSEC3
// zone nsec3.test., are told of a change by NOTIFY and ask for it by IXFR, which the embedded
// server answers with the whole signed zone. Then Unbound, asking BIND for one zone and NSD for
// the other (and the other way round), and delv through it, validate every answer, the changed
// names included, as they do the embedded server's.
func TestDNSSEC_BINDAndNSDSecondariesServeTheSignedZoneAfterAChange(t *testing.T) {
	hackrun.Need(t, "unbound", "unbound")
	hackrun.Need(t, "bind9-dnsutils", "delv")
	reg := prometheus.NewRegistry()
	metrics, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	tree := newSignedTreeWith(t, ServerOptions{Metrics: metrics})
	zones := []string{"example.test.", "nsec3.test."}
	bind, nsd := secondarytest.BIND(t), secondarytest.NSD(t)
	for _, s := range []*secondarytest.Server{bind, nsd} {
		s.Start(t, tree.child.Addr(), zones...)
	}
	notifier := xfr.NewNotifier(tree.childStore, xfr.NotifierOptions{Targets: []string{bind.Addr, nsd.Addr}, Metrics: metrics.XFR})
	testrun.Background(t, "notifier", notifier.Start)
	for _, z := range zones {
		atSerial(t, tree, z, bind, nsd)
	}

	ixfr := map[string]string{"type": "ixfr", "result": "full"}
	before := metrictest.Value(t, reg, "dnsplane_dnsserver_transfers_total", ixfr)
	for _, z := range zones {
		if err := tree.childStore.Update(z, func(tx *zonedb.Tx) error {
			put(t, tx, "", nil, "new."+z+" 300 IN A 192.0.2.9")
			put(t, tx, "", nil, "www."+z+" 300 IN A 192.0.2.3")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, z := range zones {
		atSerial(t, tree, z, bind, nsd)
	}
	if got := metrictest.Value(t, reg, "dnsplane_dnsserver_transfers_total", ixfr) - before; got < 4 {
		t.Fatalf("%v IXFRs answered with the signed zone for 2 changed zones and 2 secondaries, want 4 or more", got)
	}

	changed := func(z string) []validationCase {
		return append(validationCases(z), validationCase{"new." + z, dns.TypeA, dns.RcodeSuccess, true})
	}
	for _, pair := range [][2]*secondarytest.Server{{bind, nsd}, {nsd, bind}} {
		tree.servedBy["example.test."], tree.servedBy["nsec3.test."] = pair[0].Addr, pair[1].Addr
		t.Logf("Unbound asks %s for example.test. and %s for nsec3.test.", pair[0].Name, pair[1].Name)
		validate(t, tree, append(changed("example.test."), changed("nsec3.test.")...))
	}
}

// atSerial waits until every secondary of secs answers zone's SOA at the child server's serial.
func atSerial(t *testing.T, tree signedTree, zone string, secs ...*secondarytest.Server) {
	t.Helper()
	info, err := tree.childStore.Zone(zone)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secs {
		testrun.Eventually(t, 60*time.Second, fmt.Sprintf("%s serves %s at serial %d", s.Name, zone, info.Serial), func() error {
			m := new(dns.Msg)
			m.SetQuestion(zone, dns.TypeSOA)
			r, _, err := (&dns.Client{Net: "tcp", Timeout: time.Second}).Exchange(m, s.Addr)
			if err != nil {
				return err
			}
			for _, rr := range r.Answer {
				if soa, ok := rr.(*dns.SOA); ok && soa.Serial == info.Serial {
					return nil
				}
			}
			return fmt.Errorf("SOA answer %v", r.Answer)
		})
	}
}
