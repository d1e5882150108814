package served_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	"github.com/dnsplane/dnsplane/internal/testing/secondarytest"
	"github.com/dnsplane/dnsplane/pkg/dnsclient"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
	"github.com/dnsplane/dnsplane/pkg/served"
)

// A real PowerDNS zone made with an empty SOA-EDIT-API (as pdnsutil create-zone makes it, or an
// adopted zone) keeps its serial on a PATCH, so a real NSD secondary never transfers the change.
// The provider's write is not served: the primary is named, its serial did not move. Once the
// serial moves (an operator's increase-serial) and NSD transfers it, the change is served.
func TestPowerDNS_AWriteThatKeepsTheSerialIsNotServed(t *testing.T) {
	const zoneName = "keep.test"
	srv := pdnstest.Start(t)
	if code, body := srv.API(t, http.MethodPost, "/zones", `{"name":"keep.test.","kind":"Native","nameservers":["ns1.keep.test."],"soa_edit_api":""}`); code != http.StatusCreated {
		t.Fatalf("create zone: %d %s", code, body)
	}
	if _, body := srv.API(t, http.MethodGet, "/zones/keep.test.", ""); !strings.Contains(body, `"soa_edit_api": ""`) && !strings.Contains(body, `"soa_edit_api":""`) {
		t.Fatalf("zone %s, want an empty soa_edit_api", body)
	}
	nsd := secondarytest.NSD(t)
	nsd.Start(t, srv.DNSAddr, zoneName)
	secondarytest.SameZone(t, 60*time.Second, srv.DNSAddr, zoneName, nsd)

	ctx := context.Background()
	dc := dnsclient.Client{Timeout: 2 * time.Second}
	tr := startTracker(t, dc, nil, served.Options{FirstCheck: 20 * time.Millisecond, Interval: 200 * time.Millisecond, StaleAfter: time.Hour})
	zone := served.Zone{Key: types.NamespacedName{Namespace: "a", Name: "keep"}, Name: zoneName, Servers: []string{srv.DNSAddr, nsd.Addr}, SerialMayStay: true}
	ref := oneRef("web")
	p, err := pdns.New(pdns.Config{APIURL: srv.APIURL, APIKey: srv.Key})
	if err != nil {
		t.Fatal(err)
	}
	before, err := dc.Serial(ctx, srv.DNSAddr, zoneName)
	if err != nil {
		t.Fatal(err)
	}

	tr.Baseline(ctx, zone)
	submitted := time.Now()
	rs := provider.RecordSet{Name: "www." + zoneName, Type: "A", TTL: 60, Targets: []string{"192.0.2.47"}}
	if err := p.ApplyChanges(ctx, pdns.ZoneID(zoneName), []provider.Change{{Action: provider.ActionCreate, After: &rs}}); err != nil {
		t.Fatal(err)
	}
	w, err := tr.Written(ctx, zone, ref, submitted, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := dc.Serial(ctx, srv.DNSAddr, zoneName); after != before {
		t.Fatalf("PowerDNS moved the serial %d -> %d: the zone's SOA-EDIT-API is not empty", before, after)
	}
	time.Sleep(time.Second) // several checks
	_, v, _ := tr.Verdict(zone.Key, ref)
	if v.Status == served.StatusServed {
		t.Fatalf("Served with the serial kept at %d, and NSD not answering www.%s", before, zoneName)
	}
	msg := served.Describe(w, v.Behind, 3)
	if !strings.Contains(msg, srv.DNSAddr+", the primary") || !strings.Contains(msg, "did not move") {
		t.Fatalf("Describe = %q, want the primary named: its serial did not move", msg)
	}
	t.Logf("%s: %s", v.Status, msg)

	// The operator moves the serial; NSD checks its primary when it starts, and transfers.
	soa := "ns1.keep.test. hostmaster.keep.test. " + strconv.FormatUint(uint64(before+1), 10) + " 10800 3600 604800 3600"
	if code, body := srv.API(t, http.MethodPatch, "/zones/keep.test.", `{"rrsets":[{"name":"keep.test.","type":"SOA","ttl":3600,"changetype":"REPLACE","records":[{"content":"`+soa+`","disabled":false}]}]}`); code != http.StatusNoContent {
		t.Fatalf("bump the serial: %d %s", code, body)
	}
	nsd.Stop(t)
	nsd.Start(t, "")
	secondarytest.SameZone(t, 60*time.Second, srv.DNSAddr, zoneName, nsd)
	tr.CheckZone(ctx, zone)
	if _, v, _ := tr.Verdict(zone.Key, ref); v.Status != served.StatusServed {
		t.Fatalf("verdict %+v once NSD transferred the moved serial, want Served", v)
	}
	if !answersA(t, nsd.Addr, "www."+zoneName, "192.0.2.47") {
		t.Fatal("Served, but NSD does not answer www." + zoneName)
	}
}

// answersA reports whether server answers name A with ip, authoritatively.
func answersA(t *testing.T, server, name, ip string) bool {
	t.Helper()
	resp, err := (dnsclient.Client{Timeout: 2 * time.Second}).Query(context.Background(), server, name, dns.TypeA)
	if err != nil {
		t.Fatal(err)
	}
	for _, rr := range resp.Answer {
		if a, ok := rr.(*dns.A); ok && a.A.String() == ip {
			return true
		}
	}
	return false
}
